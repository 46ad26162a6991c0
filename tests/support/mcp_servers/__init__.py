"""Real MCP servers (the SDK's MCPServer) for the MCP peer tests: one app, two transports."""
