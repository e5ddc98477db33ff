#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The rule of lib/vsock_pmd/README.md, read from the tree: which room may include which.

The compiler enforces it too (each room builds on the include paths of the rooms it may
use); this test names the file and the include that break it, checks that every engine
file sits in a room and that no header name is in two rooms, and, from the room
libraries, that no room calls into a room it may not use and that no files use each
other.

The libraries beside the engine (lib/vsock_frontend/, lib/vsock_harness/) are held to
their READMEs' rule: the public include/ and each other as OUTSIDE says, never an engine
room's header or symbol (only the exported API of version.map).

Usage: test_rooms.py LIB_DIR [ROOM ARCHIVE]...
(a ROOM named as in OUTSIDE is that library beside LIB_DIR)
"""
import os
import re
import subprocess
import sys

# Each room and the rooms it may use besides itself. Transitive: a room that may use
# proto may use what proto's headers include.
USES = {
	'base': set(),
	'virtq': {'base'},
	'endpoint': {'base'},
	'proto': {'base', 'endpoint'},
	'dataplane': {'base', 'virtq', 'endpoint', 'proto'},
	'control': {'base', 'virtq', 'endpoint', 'proto', 'dataplane'},
}
# The libraries beside the engine and the ones of them each may use; none may use a room.
OUTSIDE = {
	'vsock_frontend': set(),
	'vsock_harness': {'vsock_frontend'},
}
# The protocol sees the endpoints through their facade only: these headers of endpoint/,
# and of the endpoint room's symbols only those the facade declares.
FACADE = {'proto': ('endpoint', {'ep.h', 'ep_queue.h'}, 'ep.h')}
# The library's own assembly, beside the rooms.
TOP_FILES = {'meson.build', 'version.c', 'version.map', 'README.md'}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

results = []


def check(ok, what, why=()):
	results.append((ok, what, list(why)))


def source_of(room, obj):
	"""room/file.c of an archive member (file.c.o)."""
	name = os.path.basename(obj)
	if name.endswith('.o'):
		name = name[:-2]
	return f'{room}/{name}'


def circles_of(uses):
	"""The sets of two or more files that reach each other through uses (file -> files)."""
	def reach(start):
		seen, todo = set(), [start]
		while todo:
			for there in uses.get(todo.pop(), ()):
				if there not in seen:
					seen.add(there)
					todo.append(there)
		return seen

	reached = {f: reach(f) for f in uses}
	groups = []
	for f in sorted(uses):
		group = {f} | {o for o in reached[f] if f in reached.get(o, ())}
		if len(group) > 1 and group not in groups:
			groups.append(group)
	return groups


def main():
	lib = sys.argv[1]
	archives = dict(zip(sys.argv[2::2], sys.argv[3::2]))

	rooms = {}	# room -> its files
	stray = []
	for name in sorted(os.listdir(lib)):
		path = os.path.join(lib, name)
		if os.path.isdir(path):
			rooms[name] = sorted(f for f in os.listdir(path) if f.endswith(('.c', '.h')))
		elif name not in TOP_FILES:
			stray.append(name)
	check(set(rooms) == set(USES), 'the rooms are ' + ', '.join(sorted(USES)),
		['rooms on disk: ' + ', '.join(sorted(rooms))])
	check(not stray, 'every engine file is in a room', stray)

	home = {}	# header -> its room
	twice = []
	for room, files in rooms.items():
		for f in files:
			if f.endswith('.h'):
				if f in home:
					twice.append(f'{f} in {home[f]}/ and {room}/')
				home[f] = room
	check(not twice, 'no header name is in two rooms', twice)

	for room in sorted(rooms):
		bad = []
		for f in rooms[room]:
			with open(os.path.join(lib, room, f), encoding='utf-8') as src:
				for inc in INCLUDE.findall(src.read()):
					there = home.get(os.path.basename(inc))
					if there is None:
						bad.append(f'{room}/{f}: #include "{inc}" is in no room')
					elif there != room and there not in USES.get(room, ()):
						bad.append(f'{room}/{f}: #include "{inc}" of {there}/, '
							f'{room}/ may use '
							+ (', '.join(sorted(USES.get(room, ()))) or 'no other room'))
		check(not bad, f'{room}/ includes only the rooms it may use', bad)

	# Beside the engine: own headers, the allowed libraries', the public include/.
	top = os.path.dirname(os.path.abspath(lib))
	public = set(os.listdir(os.path.join(os.path.dirname(top), 'include')))
	public.add('vsock_pmd_version.h')	# generated from include/
	for name in sorted(OUTSIDE):
		where = os.path.join(top, name)
		own = {name: set(os.listdir(where))}
		for other in OUTSIDE[name]:
			own[other] = set(os.listdir(os.path.join(top, other)))
		bad = []
		for f in sorted(os.listdir(where)):
			if not f.endswith(('.c', '.h')):
				continue
			with open(os.path.join(where, f), encoding='utf-8') as src:
				for inc in INCLUDE.findall(src.read()):
					base = os.path.basename(inc)
					if any(base in files for files in own.values()) or base in public:
						continue
					there = home.get(base)
					bad.append(f'{name}/{f}: #include "{inc}"'
						+ (f' of the engine\'s {there}/' if there else ' is nowhere it may use'))
		check(not bad, f'{name}/ includes only itself, '
			+ ''.join(f'{o}/, ' for o in sorted(OUTSIDE[name])) + 'and include/', bad)

	for room, (other, headers, _) in sorted(FACADE.items()):
		bad = []
		for f in rooms.get(room, ()):
			with open(os.path.join(lib, room, f), encoding='utf-8') as src:
				for inc in INCLUDE.findall(src.read()):
					if home.get(os.path.basename(inc)) == other and inc not in headers:
						bad.append(f'{room}/{f}: #include "{inc}"')
		check(not bad, f'{room}/ includes of {other}/ only ' + ', '.join(sorted(headers)), bad)

	# Who defines what, from the room libraries: a room's undefined symbol defined in
	# another room is a call (or a reference) across rooms.
	defined = {}
	defined_in = {}	# symbol -> room/file.c that defines it
	undefined = {}
	for room, archive in archives.items():
		out = subprocess.run(['nm', archive], check=True, capture_output=True,
			text=True).stdout
		undefined[room] = []
		obj = archive
		for line in out.splitlines():
			parts = line.split()
			if len(parts) == 1 and parts[0].endswith(':'):
				obj = parts[0][:-1]
			elif len(parts) == 2 and parts[0] == 'U':
				undefined[room].append((obj, parts[1]))
			elif len(parts) == 3 and parts[1] in 'TDBRC':
				defined.setdefault(parts[2], room)
				defined_in.setdefault(parts[2], source_of(room, obj))
	# The exported API, which the libraries beside the engine may call.
	with open(os.path.join(lib, 'version.map'), encoding='utf-8') as vmap:
		exported = set(re.findall(r'^\s*(\w+);', vmap.read(), re.M))
	for room in sorted(archives):
		uses = OUTSIDE[room] | exported if room in OUTSIDE else USES.get(room, set())
		bad = sorted({f'{obj} uses {sym} of {defined[sym]}/'
			for obj, sym in undefined[room]
			if sym in defined and defined[sym] != room
			and defined[sym] not in uses and sym not in uses})
		check(not bad, f'{room}/ calls only into the rooms it may use', bad)
	for room, (other, _, header) in sorted(FACADE.items()):
		if room not in archives:
			continue
		with open(os.path.join(lib, other, header), encoding='utf-8') as src:
			declared = set(re.findall(r'\b(\w+)\s*\(', src.read()))
		bad = sorted({f'{obj} uses {sym}' for obj, sym in undefined[room]
			if defined.get(sym) == other and sym not in declared})
		check(not bad, f'{room}/ calls into {other}/ only through {header}', bad)

	# Files that use each other, directly or round a longer circle, are one job cut in two.
	uses = {}
	for room in (r for r in archives if r in USES):
		for obj, sym in undefined[room]:
			there = defined_in.get(sym)
			here = source_of(room, obj)
			if there is not None and there != here:
				uses.setdefault(here, set()).add(there)
	circles = [' <-> '.join(sorted(group)) for group in circles_of(uses)]
	if archives:
		check(not circles, 'no engine files use each other', circles)

	print('TAP version 13')
	print(f'1..{len(results)}')
	for n, (ok, what, why) in enumerate(results, 1):
		print(f'{"ok" if ok else "not ok"} {n} - {what}')
		for line in why if not ok else ():
			print(f'# {line}')
	return 0 if all(ok for ok, _, _ in results) else 1


if __name__ == '__main__':
	sys.exit(main())
