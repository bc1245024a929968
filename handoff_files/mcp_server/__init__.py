"""The MCP server: a thread's handoffs as tools a model calls over stdio (the optional extra ``[mcp]``)."""
