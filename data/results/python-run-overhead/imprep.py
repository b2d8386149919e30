import re, collections
rows = []
pkg = collections.Counter()
for line in open('/tmp/imp.txt'):
    m = re.match(r'import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)', line)
    if m:
        pkg[m.group(4).split('.')[0]] += int(m.group(1))
        if len(m.group(3)) <= 1:
            rows.append((int(m.group(2)), m.group(4)))
rows.sort(reverse=True)
print('total top-level import us', sum(r[0] for r in rows))
print('self time by top package:', pkg.most_common(25))
