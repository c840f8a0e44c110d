import DeckCommandLine

DeckCommandLine.main()
