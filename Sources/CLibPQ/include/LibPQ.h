#ifndef CALLSTATS_LIBPQ_H
#define CALLSTATS_LIBPQ_H

// The part of libpq that PostgresDatabase calls, loaded at run time (`libpq_load`) instead of
// linked, so that only a process given a PostgreSQL URL maps libpq and the 22 libraries it
// brings (Kerberos, LDAP, OpenSSL, ...): linked, they cost every command about 19 million
// instructions at start (DECISIONS.md). Nothing here needs libpq's headers to build.
//
// What must stay true: every declaration below is libpq's own, copied from libpq-fe.h
// (PostgreSQL 15; Oid from postgres_ext.h), numbers included. They are the ABI of libpq.so.5,
// which PostgreSQL keeps stable across its versions (enum values are only ever appended,
// signatures never change), so they hold for whichever libpq5 the loader finds. A function
// added here needs its slot in `struct libpq_functions`, its line in LibPQ.c's symbol table
// and its wrapper below.
//
// The wrappers are static inline and keep libpq's names, so the Swift code reads as libpq's
// documentation does; they are compiled into each caller and export no symbol that could
// stand in for libpq's own. Call them only after `libpq_load` has returned NULL: before, the
// table is empty and a call jumps to address 0.

typedef unsigned int Oid;

// Only the first two: the rest are the steps of a non-blocking connection, which is not used.
typedef enum {
    CONNECTION_OK = 0,
    CONNECTION_BAD = 1,
} ConnStatusType;

typedef enum {
    PGRES_EMPTY_QUERY = 0,
    PGRES_COMMAND_OK = 1,
    PGRES_TUPLES_OK = 2,
    PGRES_COPY_OUT = 3,
    PGRES_COPY_IN = 4,
    PGRES_BAD_RESPONSE = 5,
    PGRES_NONFATAL_ERROR = 6,
    PGRES_FATAL_ERROR = 7,
    PGRES_COPY_BOTH = 8,
    PGRES_SINGLE_TUPLE = 9,
    PGRES_PIPELINE_SYNC = 10,
    PGRES_PIPELINE_ABORTED = 11,
} ExecStatusType;

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;
typedef void (*PQnoticeProcessor)(void *arg, const char *message);

/// libpq's functions, filled by `libpq_load` from the library it opens.
struct libpq_functions {
    PGconn *(*PQconnectdb)(const char *conninfo);
    void (*PQfinish)(PGconn *conn);
    ConnStatusType (*PQstatus)(const PGconn *conn);
    int (*PQserverVersion)(const PGconn *conn);
    char *(*PQerrorMessage)(const PGconn *conn);
    PQnoticeProcessor (*PQsetNoticeProcessor)(PGconn *conn, PQnoticeProcessor proc, void *arg);
    PGresult *(*PQexec)(PGconn *conn, const char *query);
    PGresult *(*PQexecParams)(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
                              const char *const *paramValues, const int *paramLengths, const int *paramFormats,
                              int resultFormat);
    PGresult *(*PQgetResult)(PGconn *conn);
    int (*PQputCopyData)(PGconn *conn, const char *buffer, int nbytes);
    int (*PQputCopyEnd)(PGconn *conn, const char *errormsg);
    ExecStatusType (*PQresultStatus)(const PGresult *res);
    char *(*PQresultErrorMessage)(const PGresult *res);
    char *(*PQresultErrorField)(const PGresult *res, int fieldcode);
    int (*PQntuples)(const PGresult *res);
    int (*PQnfields)(const PGresult *res);
    char *(*PQfname)(const PGresult *res, int field_num);
    Oid (*PQftype)(const PGresult *res, int field_num);
    char *(*PQcmdTuples)(PGresult *res);
    char *(*PQgetvalue)(const PGresult *res, int tup_num, int field_num);
    int (*PQgetlength)(const PGresult *res, int tup_num, int field_num);
    int (*PQgetisnull)(const PGresult *res, int tup_num, int field_num);
    void (*PQclear)(PGresult *res);
};

/// Written once, by the first `libpq_load`; read-only afterwards.
extern struct libpq_functions libpq_functions;

/// Opens libpq and fills `libpq_functions`, once per process (later calls, from any thread,
/// wait for the first and return its outcome). NULL when libpq is ready; otherwise a message
/// naming the library and what is missing, to show the user. The library is libpq.so.5
/// (libpq.5.dylib on macOS), found the way the dynamic loader finds any library, or the file
/// the environment variable CALLSTATS_LIBPQ names.
const char *libpq_load(void);

static inline PGconn *PQconnectdb(const char *conninfo) { return libpq_functions.PQconnectdb(conninfo); }
static inline void PQfinish(PGconn *conn) { libpq_functions.PQfinish(conn); }
static inline ConnStatusType PQstatus(const PGconn *conn) { return libpq_functions.PQstatus(conn); }
static inline int PQserverVersion(const PGconn *conn) { return libpq_functions.PQserverVersion(conn); }
static inline char *PQerrorMessage(const PGconn *conn) { return libpq_functions.PQerrorMessage(conn); }
static inline PQnoticeProcessor PQsetNoticeProcessor(PGconn *conn, PQnoticeProcessor proc, void *arg) {
    return libpq_functions.PQsetNoticeProcessor(conn, proc, arg);
}
static inline PGresult *PQexec(PGconn *conn, const char *query) { return libpq_functions.PQexec(conn, query); }
static inline PGresult *PQexecParams(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
                                     const char *const *paramValues, const int *paramLengths, const int *paramFormats,
                                     int resultFormat) {
    return libpq_functions.PQexecParams(conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats,
                                        resultFormat);
}
static inline PGresult *PQgetResult(PGconn *conn) { return libpq_functions.PQgetResult(conn); }
static inline int PQputCopyData(PGconn *conn, const char *buffer, int nbytes) {
    return libpq_functions.PQputCopyData(conn, buffer, nbytes);
}
static inline int PQputCopyEnd(PGconn *conn, const char *errormsg) { return libpq_functions.PQputCopyEnd(conn, errormsg); }
static inline ExecStatusType PQresultStatus(const PGresult *res) { return libpq_functions.PQresultStatus(res); }
static inline char *PQresultErrorMessage(const PGresult *res) { return libpq_functions.PQresultErrorMessage(res); }
static inline char *PQresultErrorField(const PGresult *res, int fieldcode) {
    return libpq_functions.PQresultErrorField(res, fieldcode);
}
static inline int PQntuples(const PGresult *res) { return libpq_functions.PQntuples(res); }
static inline int PQnfields(const PGresult *res) { return libpq_functions.PQnfields(res); }
static inline char *PQfname(const PGresult *res, int field_num) { return libpq_functions.PQfname(res, field_num); }
static inline Oid PQftype(const PGresult *res, int field_num) { return libpq_functions.PQftype(res, field_num); }
static inline char *PQcmdTuples(PGresult *res) { return libpq_functions.PQcmdTuples(res); }
static inline char *PQgetvalue(const PGresult *res, int tup_num, int field_num) {
    return libpq_functions.PQgetvalue(res, tup_num, field_num);
}
static inline int PQgetlength(const PGresult *res, int tup_num, int field_num) {
    return libpq_functions.PQgetlength(res, tup_num, field_num);
}
static inline int PQgetisnull(const PGresult *res, int tup_num, int field_num) {
    return libpq_functions.PQgetisnull(res, tup_num, field_num);
}
static inline void PQclear(PGresult *res) { libpq_functions.PQclear(res); }

#endif
