#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H
#include <libpq-fe.h>
#include <poll.h>

/* The PG_DIAG_* field codes are character-literal macros, which Swift does not import. */
static const int CLIBPQ_DIAG_SQLSTATE = PG_DIAG_SQLSTATE;
static const int CLIBPQ_DIAG_MESSAGE_PRIMARY = PG_DIAG_MESSAGE_PRIMARY;
static const int CLIBPQ_DIAG_MESSAGE_DETAIL = PG_DIAG_MESSAGE_DETAIL;
static const int CLIBPQ_DIAG_MESSAGE_HINT = PG_DIAG_MESSAGE_HINT;
static const int CLIBPQ_DIAG_CONSTRAINT_NAME = PG_DIAG_CONSTRAINT_NAME;
static const int CLIBPQ_DIAG_TABLE_NAME = PG_DIAG_TABLE_NAME;
static const int CLIBPQ_DIAG_COLUMN_NAME = PG_DIAG_COLUMN_NAME;
#endif
