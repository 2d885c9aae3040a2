"""What the server keeps: stored responses, chat completions and conversations on one SQLite file, owned by tenants."""
