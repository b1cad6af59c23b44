#!/usr/bin/env bash
# Install what is missing, then run the server (stdio by default). Extra args go to the server:
#   ./scripts/serve.sh                 MCP server on stdio
#   ./scripts/serve.sh demo            three isolated sessions, side by side
#   ./scripts/serve.sh --transport http --auth-token s3cret
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >&2
exec .venv/bin/browser-use-mcp "$@"
