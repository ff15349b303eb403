"""Rename a node type in the `names` file of many blocks, with an fsync
every FSYNC_EVERY blocks (default 1); after an fsync returns, append the
blocks it covers to a log (with grouped commits, an fsync writes every
change before it). Stops quietly when the mount goes away (the crash tests
kill the daemon).

usage: bulk_rename.py MNT BLOCK_LIST LOG OLD_NAME NEW_NAME
"""
import os
import sys

mnt, block_list, log_path, old, new = sys.argv[1:6]
every = int(os.environ.get("FSYNC_EVERY", "1"))
unsynced = []
old_line, new_line = f" {old}\n".encode(), f" {new}\n".encode()
with open(log_path, "a", buffering=1) as log:
    for pos in open(block_list).read().split():
        path = f"{mnt}/blocks/{pos}/names"
        try:
            with open(path, "rb") as f:
                text = f.read()
            changed = text.replace(old_line, new_line)
            if changed == text:
                continue
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
            try:
                os.write(fd, changed)
                unsynced.append(pos)
                if len(unsynced) >= every:
                    os.fsync(fd)
                    log.write("".join(p + "\n" for p in unsynced))
                    unsynced.clear()
            finally:
                os.close(fd)
        except OSError as e:
            print(f"stopped at {pos}: {e}", file=sys.stderr)
            sys.exit(0)
