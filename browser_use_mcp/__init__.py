"""browser-use-mcp: a session-isolated MCP server for browser-use."""

__version__ = '0.1.0'
