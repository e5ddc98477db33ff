#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The rule of lib/vsock_pmd/README.md, read from the tree: which room may include which;
and, in the whole tree, no circle of files.

The compiler enforces the rooms' rule too (each room builds on the include paths of the
rooms it may use); this test names the file and the include that break it, checks that
every engine file sits in a room and that no header name is in two rooms, and, from the
room libraries, that no room calls into a room it may not use.

The libraries beside the engine (lib/vsock_frontend/, lib/vsock_harness/) are held to
their READMEs' rule: the public include/ and each other as OUTSIDE says, never an engine
room's header or symbol (only the exported API of version.map).

No circle anywhere: in every C file of lib/, app/, include/ and tests/, no headers that
include each other, directly or round a longer circle; in the engine, the libraries beside
it, the programs of app/ and the tests' shared code, no files that use each other's
functions or data (from the archives' symbols), every C file of those read.

Usage: test_rooms.py SRC_ROOT [NAME ARCHIVE]...
NAME is an engine room, a library as named in OUTSIDE, or the folder (from SRC_ROOT) of a
program or of tests' shared code whose objects ARCHIVE holds; a NAME may come more than once.
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
# alone in their folder (the protocol's include path has that folder, not the room's), and
# of the endpoint room's symbols only those the facade's first header declares.
FACADE = {'proto': ('endpoint', 'facade', ('ep.h', 'ep_queue.h'))}
# The library's own assembly, beside the rooms.
TOP_FILES = {'meson.build', 'version.c', 'version.map', 'README.md'}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Where the test reads every C file for include circles.
TREE = ('lib', 'app', 'include', 'tests')
# The C files whose objects the test must read for call circles: the engine, the libraries
# beside it, the programs, and the tests' shared code (tests/common/, each suite's *_util.c).
READ = (r'lib/.*\.c', r'app/.*\.c', r'tests/common/.*\.c', r'tests/[^/]+/[^/]+_util\.c')

results = []


def check(ok, what, why=()):
	results.append((ok, what, list(why)))


def c_files(root, tops):
	"""Every .c and .h file below the folders @p tops of @p root, as paths from root."""
	found = []
	for top in tops:
		for where, dirs, files in os.walk(os.path.join(root, top)):
			dirs.sort()
			found += sorted(os.path.relpath(os.path.join(where, f), root)
				for f in files if f.endswith(('.c', '.h')))
	return found


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


def include_uses(root, files):
	"""file -> the files of the tree it includes: beside it first, else the one of that name."""
	by_name = {}
	for f in files:
		by_name.setdefault(os.path.basename(f), []).append(f)
	uses = {}
	for f in files:
		with open(os.path.join(root, f), encoding='utf-8') as src:
			for inc in INCLUDE.findall(src.read()):
				beside = os.path.normpath(os.path.join(os.path.dirname(f), inc))
				named = by_name.get(os.path.basename(inc), [])
				there = beside if beside in named else named[0] if len(named) == 1 else None
				if there is not None and there != f:
					uses.setdefault(f, set()).add(there)
	return uses


def folder_of(name, root, lib):
	"""The source folder of an archive's NAME, from the tree's root."""
	if name in USES:
		return os.path.join(os.path.relpath(lib, root), name)
	if name in OUTSIDE:
		return os.path.join('lib', name)
	return name


def source_of(folder, obj, files):
	"""The tree's source of an archive member: meson names an object after its source's
	path from the target's folder, '/' as '_' (file.c.o, .._common_file.c.o)."""
	name = os.path.basename(obj)
	if name.endswith('.o'):
		name = name[:-2]
	for f in files:
		if os.path.relpath(f, folder).replace('/', '_') == name:
			return f
	return os.path.join(folder, name)


def symbols(archive):
	"""(member, kind, symbol) of every symbol nm lists in @p archive."""
	out = subprocess.run(['nm', archive], check=True, capture_output=True, text=True).stdout
	obj = archive
	for line in out.splitlines():
		parts = line.split()
		if len(parts) == 1 and parts[0].endswith(':'):
			obj = parts[0][:-1]
		elif len(parts) == 2 and parts[0] == 'U':
			yield obj, 'U', parts[1]
		elif len(parts) == 3 and parts[1] in 'TDBRCV':
			yield obj, parts[1], parts[2]


def main():
	root = os.path.abspath(sys.argv[1])
	lib = os.path.join(root, 'lib', 'vsock_pmd')
	archives = list(zip(sys.argv[2::2], sys.argv[3::2]))
	tree = c_files(root, TREE)

	rooms = {}	# room -> its files
	stray = []
	for name in sorted(os.listdir(lib)):
		path = os.path.join(lib, name)
		if os.path.isdir(path):
			rooms[name] = [os.path.relpath(f, os.path.join('lib', 'vsock_pmd', name))
				for f in c_files(root, [os.path.join('lib', 'vsock_pmd', name)])]
		elif name not in TOP_FILES:
			stray.append(name)
	check(set(rooms) == set(USES), 'the rooms are ' + ', '.join(sorted(USES)),
		['rooms on disk: ' + ', '.join(sorted(rooms))])
	check(not stray, 'every engine file is in a room', stray)

	home = {}	# header -> its room
	twice = []
	for room, files in rooms.items():
		for f in map(os.path.basename, files):
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

	for room, (other, folder, headers) in sorted(FACADE.items()):
		bad = []
		for f in rooms.get(room, ()):
			with open(os.path.join(lib, room, f), encoding='utf-8') as src:
				for inc in INCLUDE.findall(src.read()):
					if home.get(os.path.basename(inc)) == other and inc not in headers:
						bad.append(f'{room}/{f}: #include "{inc}"')
		check(not bad, f'{room}/ includes of {other}/ only ' + ', '.join(headers), bad)
		there = sorted(os.path.basename(f) for f in rooms.get(other, ())
			if os.path.dirname(f) == folder)
		check(there == sorted(headers), f'{other}/{folder}/ holds ' + ', '.join(headers)
			+ ' and nothing else', [f'{other}/{folder}/: ' + ', '.join(there)])

	# Who defines what, from the archives: an undefined symbol of one file defined in
	# another is a use (a call, or a reference to data); across rooms, a use of that room.
	objects = {}	# archive member -> its source in the tree
	units = {}	# NAME -> the sources of its archives
	undefined = {}	# NAME -> (source, symbol) of each use
	defined_in = {}	# NAME -> {symbol: source}
	for name, archive in archives:
		folder = folder_of(name, root, lib)
		units.setdefault(name, set())
		undefined.setdefault(name, [])
		defined_in.setdefault(name, {})
		for obj, kind, sym in symbols(archive):
			src = objects.setdefault((archive, obj), source_of(folder, obj, tree))
			units[name].add(src)
			if kind == 'U':
				undefined[name].append((src, sym))
			elif kind in 'TDBRC':
				defined_in[name].setdefault(sym, src)
	room_of = {src: name for name in USES for src in units.get(name, ())}
	room_of.update({src: name for name in OUTSIDE for src in units.get(name, ())})
	defined = {}	# symbol -> the room or library beside the engine defining it
	for name in units:
		if name in USES or name in OUTSIDE:
			for sym, src in defined_in[name].items():
				defined.setdefault(sym, room_of[src])
	# The exported API, which the libraries beside the engine may call.
	with open(os.path.join(lib, 'version.map'), encoding='utf-8') as vmap:
		exported = set(re.findall(r'^\s*(\w+);', vmap.read(), re.M))
	for room in sorted(n for n in units if n in USES or n in OUTSIDE):
		uses = OUTSIDE[room] | exported if room in OUTSIDE else USES.get(room, set())
		bad = sorted({f'{src} uses {sym} of {defined[sym]}/'
			for src, sym in undefined[room]
			if sym in defined and defined[sym] != room
			and defined[sym] not in uses and sym not in uses})
		check(not bad, f'{room}/ calls only into the rooms it may use', bad)
	for room, (other, folder, (header, *_)) in sorted(FACADE.items()):
		if room not in units:
			continue
		with open(os.path.join(lib, other, folder, header), encoding='utf-8') as src:
			declared = set(re.findall(r'\b(\w+)\s*\(', src.read()))
		bad = sorted({f'{src} uses {sym}' for src, sym in undefined[room]
			if defined.get(sym) == other and sym not in declared})
		check(not bad, f'{room}/ calls into {other}/ only through {header}', bad)

	# Files that use each other, directly or round a longer circle, are one job cut in two.
	# A symbol is looked up in the user's own archives first (a program's main() and its
	# own files), then in the one other archive that defines it.
	owners = {}	# symbol -> the NAMEs defining it
	for name, syms in defined_in.items():
		for sym in syms:
			owners.setdefault(sym, set()).add(name)
	calls = {}
	for name in units:
		for src, sym in undefined[name]:
			there = defined_in[name].get(sym)
			if there is None and len(owners.get(sym, ())) == 1:
				there = defined_in[next(iter(owners[sym]))][sym]
			if there is not None and there != src:
				calls.setdefault(src, set()).add(there)
	circles = [' <-> '.join(sorted(group)) for group in circles_of(calls)]
	check(not circles, 'no files use each other\'s functions or data, directly or round '
		'a circle', circles)
	read = set().union(*units.values()) if units else set()
	unread = [f for f in tree if f.endswith('.c') and f not in read
		and any(re.fullmatch(r, f) for r in READ)
		and os.path.join(root, f) not in (os.path.join(lib, t) for t in TOP_FILES)]
	check(not unread, 'the uses of every C file of the engine, the libraries beside it, the '
		'programs and the tests\' shared code are read', unread)

	# Headers that include each other compile only through their guards, and then in one
	# order only.
	circles = [' <-> '.join(sorted(group)) for group in circles_of(include_uses(root, tree))]
	check(not circles, f'no include circle in {", ".join(t + "/" for t in TREE)} '
		f'({len(tree)} files)', circles)

	print('TAP version 13')
	print(f'1..{len(results)}')
	for n, (ok, what, why) in enumerate(results, 1):
		print(f'{"ok" if ok else "not ok"} {n} - {what}')
		for line in why if not ok else ():
			print(f'# {line}')
	return 0 if all(ok for ok, _, _ in results) else 1


if __name__ == '__main__':
	sys.exit(main())
