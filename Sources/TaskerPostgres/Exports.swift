// The text formats the client reads and writes (untrusted JSON's nesting bound, credential
// redaction, PostgreSQL's timestamp text) live in TaskerText, below this module and TaskerModel;
// a user of the client sees them as before.
@_exported import TaskerText
