from sqlanon.cli import main

main()
