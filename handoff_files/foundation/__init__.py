"""Foundation: errors, durable atomic I/O, the writers' lock and names; imports nothing else of the package."""
