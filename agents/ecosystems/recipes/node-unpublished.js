// swemint (agents/ecosystems/node/__init__.py, repair "unpublished"): a locked version the
// registry no longer serves (404) is overridden in the root package.json by the lowest
// published release above it. argv: <package name> <missing version> <npm|yarn|yarn-berry|pnpm>.
const { execFileSync } = require('child_process');
const fs = require('fs');
const [name, missing, pm] = process.argv.slice(1);
const versions = [].concat(JSON.parse(execFileSync('npm', ['view', name, 'versions', '--json']).toString()));
const key = (v) => v.split(/[.+-]/).slice(0, 3).map(Number);
const cmp = (a, b) => { const x = key(a), y = key(b); for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i]; return 0; };
const up = versions.filter((v) => !v.includes('-') && cmp(v, missing) > 0).sort(cmp)[0];
if (!up) { console.error(`swemint: no published ${name} above ${missing}`); process.exit(1); }
const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8'));
if (pm === 'npm') pkg.overrides = Object.assign({}, pkg.overrides, { [name]: up });
else if (pm === 'pnpm') pkg.pnpm = Object.assign({}, pkg.pnpm, { overrides: Object.assign({}, (pkg.pnpm || {}).overrides, { [name]: up }) });
else pkg.resolutions = Object.assign({}, pkg.resolutions, { [name]: up });
fs.writeFileSync('package.json', JSON.stringify(pkg, null, 2) + '\n');
console.log(`swemint: ${name}@${missing} is not on the registry; overridden with ${up}`);
