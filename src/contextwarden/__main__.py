from contextwarden.cli import main

main()
