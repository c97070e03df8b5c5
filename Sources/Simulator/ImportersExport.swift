// The Chromium recording importer lives in Importers; the simulator's users (benchmarks, tests
// that analyse the recording) reach it through this module as well.
@_exported import Importers
