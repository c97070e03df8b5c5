#include <sqlite3.h>

/// sqlite3_config is variadic, which Swift cannot call: turns off SQLite's memory-use
/// statistics (a process-wide mutex taken on every allocation). Only before SQLite initialises;
/// later it returns SQLITE_MISUSE and changes nothing.
static inline int callstats_sqlite3_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
