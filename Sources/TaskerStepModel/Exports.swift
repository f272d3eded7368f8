// UntrustedJSON and StringEscaping come with the wire types.
@_exported import TaskerText
