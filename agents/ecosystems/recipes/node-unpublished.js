// swemint (agents/ecosystems/node/__init__.py, repair "unpublished"): a locked version the
// registry no longer serves (404) is overridden in the root package.json by the lowest
// published version above it: a release, or for a missing prerelease (8.0.0-alpha.4) the next
// prerelease of the same x.y.z (8.0.0-alpha.5) when the registry has one. The override names
// the missing version (`name@version`; yarn 1's resolutions take names only), so dependents
// of other versions of the package keep theirs.
// argv: <package name> <missing version> <npm|yarn|yarn-berry|pnpm>.
const { execFileSync } = require('child_process');
const fs = require('fs');
const [name, missing, pm] = process.argv.slice(1);
const versions = [].concat(JSON.parse(execFileSync('npm', ['view', name, 'versions', '--json']).toString()));
const split = (v) => { const [core, ...pre] = v.split('+')[0].split('-'); return [core.split('.').map(Number), pre.join('-')]; };
const cmpId = (a, b) => {  // semver prerelease identifiers: numbers below words, numbers by value
  const na = /^\d+$/.test(a), nb = /^\d+$/.test(b);
  if (na && nb) return Number(a) - Number(b);
  if (na !== nb) return na ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
};
const cmp = (a, b) => {
  const [x, p] = split(a), [y, q] = split(b);
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i];
  if (!p || !q) return (p ? -1 : 0) - (q ? -1 : 0);
  const s = p.split('.'), t = q.split('.');
  for (let i = 0; i < Math.min(s.length, t.length); i++) { const c = cmpId(s[i], t[i]); if (c) return c; }
  return s.length - t.length;
};
const [core, pre] = split(missing);
const sameCore = (v) => split(v)[0].join('.') === core.join('.');
const ok = (v) => cmp(v, missing) > 0 && (!v.includes('-') || (pre && sameCore(v)));
const up = versions.filter(ok).sort(cmp)[0];
if (!up) { console.error(`swemint: no published ${name} above ${missing}`); process.exit(1); }
const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8'));
const key = pm === 'yarn' ? name : pm === 'yarn-berry' ? `${name}@npm:${missing}` : `${name}@${missing}`;
if (pm === 'npm') pkg.overrides = Object.assign({}, pkg.overrides, { [key]: up });
else if (pm === 'pnpm') pkg.pnpm = Object.assign({}, pkg.pnpm, { overrides: Object.assign({}, (pkg.pnpm || {}).overrides, { [key]: up }) });
else pkg.resolutions = Object.assign({}, pkg.resolutions, { [key]: up });
fs.writeFileSync('package.json', JSON.stringify(pkg, null, 2) + '\n');
console.log(`swemint: ${name}@${missing} is not on the registry; overridden with ${up}`);
