import pstats
st = pstats.Stats("/tmp/prof.out")
print("total", round(st.total_tt, 3))
for key, (cc, nc, tt, ct, callers) in st.stats.items():
    if key[2] in ("<built-in method builtins.compile>", "<built-in method marshal.loads>") or (key[2] == "parse" and key[0].endswith("ast.py")):
        print(key[2], nc, round(tt, 3), round(ct, 3))
        for ck, v in sorted(callers.items(), key=lambda kv: -kv[1][3])[:8]:
            print("   ", ck[0][-60:], ck[1], ck[2], v[1], round(v[3], 3))
st.sort_stats("cumulative").print_stats(40)
