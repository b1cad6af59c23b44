from browser_use_mcp.cli import main

if __name__ == '__main__':
	main()
