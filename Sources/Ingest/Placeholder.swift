// Placeholder until the analysis engine lands.
