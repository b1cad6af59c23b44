"""Stand-ins for outside services the tests must not reach (LLM providers)."""
