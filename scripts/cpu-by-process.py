#!/usr/bin/env python3
"""CPU seconds per process group, every INTERVAL seconds, as JSON lines (Linux /proc only).

  python3 scripts/cpu-by-process.py [INTERVAL] > cpu.jsonl &   # beside `npm run bench -- --citus`

Used for docs/citus.md ("Where the time goes"): PostgreSQL backends are counted under their server
(`pg:<data directory's parent>/<data directory>`: the bench's embedded server, the Citus coordinator and
each worker), API processes under their database (`api:<host:port/db>`), the load generator, the raw
baseline and the bench harness under their own names. Sum a scenario's lines between its start and
end and divide by its requests for CPU milliseconds per request.
"""
import json
import os
import re
import sys
import time

HZ = os.sysconf('SC_CLK_TCK')


def processes():
    found = {}
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{pid}/stat') as f:
                fields = f.read().rsplit(')', 1)[1].split()
            with open(f'/proc/{pid}/cmdline', 'rb') as f:
                command = f.read().replace(b'\0', b' ').decode(errors='replace')
            found[int(pid)] = (int(fields[1]), int(fields[11]) + int(fields[12]), command)
        except (OSError, IndexError, ValueError):
            pass
    return found


def environment(pid, key):
    try:
        with open(f'/proc/{pid}/environ', 'rb') as f:
            for pair in f.read().split(b'\0'):
                if pair.startswith(key.encode() + b'='):
                    return pair.split(b'=', 1)[1].decode()
    except OSError:
        pass
    return None


groups = {}


def group_of(pid, table):
    if pid in groups:
        return groups[pid]
    command = table[pid][2]
    name = 'other'
    if 'postgres' in command:
        server = pid  # a backend's server is its topmost postgres ancestor
        while table.get(server) and table[server][0] in table and 'postgres' in table[table[server][0]][2]:
            server = table[server][0]
        data = re.search(r'-D (\S+)', table[server][2])
        name = 'pg:' + ('/'.join(data.group(1).rstrip('/').split('/')[-2:]) if data else str(server))
    elif 'workplace.js' in command:
        name = 'api:' + (environment(pid, 'DATABASE_URL') or '?').split('@')[-1]
    elif 'autocannon' in command:
        name = 'load generator'
    elif 'baseline-server' in command:
        name = 'baseline'
    elif 'bench/run.ts' in command:
        name = 'bench harness'
    groups[pid] = name
    return name


def main():
    interval = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    before = processes()
    while True:
        time.sleep(interval)
        now = processes()
        seconds = {}
        for pid, (_, ticks, _) in now.items():
            spent = ticks - (before[pid][1] if pid in before else 0)
            if spent > 0:
                name = group_of(pid, now)
                seconds[name] = round(seconds.get(name, 0) + spent / HZ, 2)
        before = now
        line = {'t': time.strftime('%H:%M:%S'), 'load': os.getloadavg()[0], 'cpu': seconds}
        print(json.dumps(line), flush=True)


if __name__ == '__main__':
    main()
