import re,sys,collections
def funcs(path, pat):
    out=collections.OrderedDict(); cur=None
    for line in open(path):
        m=re.match(r'\s*Function : (\S+)', line)
        if m:
            cur=m.group(1) if re.search(pat, m.group(1)) else None
            if cur: out[cur]=[]
            continue
        if cur is not None:
            l=re.sub(r'/\*[0-9a-f]{4,}\*/','',line).strip()
            l=re.sub(r'/\* 0x[0-9a-f]+ \*/','',l).strip()
            if l: out[cur].append(l)
    return out
a=funcs(sys.argv[1], sys.argv[3]); b=funcs(sys.argv[2], sys.argv[3])
same=diff=0
for k in a:
    if k not in b: print('only old', k[:120]); continue
    if a[k]==b[k]: same+=1
    else:
        diff+=1; print('DIFFERENT', k[:160], len(a[k]), len(b[k]))
for k in b:
    if k not in a: print('only new', k[:120])
print('identical', same, 'different', diff)
