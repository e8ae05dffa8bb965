python3 - <<'PY'
s = open("greet.py").read()
s = s.replace('    parser.add_argument("name", help="who to greet")\n',
              '    parser.add_argument("name", help="who to greet")\n'
              '    parser.add_argument("--shout", action="store_true", help="print in upper case")\n')
s = s.replace('    print(message)\n', '    print(message.upper() if args.shout else message)\n')
open("greet.py", "w").write(s)
PY
