#!/usr/bin/env python3
"""write_file.py PATH HEX|@FILE [append]: write bytes to PATH and report how
close() went: prints "OK" or "ERR <errno name>" (close() is where a
filesystem that validates on close reports a refused write)."""
import errno, os, sys

path, data = sys.argv[1], sys.argv[2]
content = open(data[1:], 'rb').read() if data.startswith('@') else bytes.fromhex(data)
mode = os.O_WRONLY | (os.O_APPEND if len(sys.argv) > 3 else os.O_TRUNC | os.O_CREAT)
try:
    fd = os.open(path, mode, 0o644)
    os.write(fd, content)
    os.close(fd)
    print("OK")
except OSError as e:
    print("ERR", errno.errorcode.get(e.errno, e.errno))
