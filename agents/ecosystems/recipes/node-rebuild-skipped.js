// swemint (agents/ecosystems/node/node_plan.py, after the install): when a repair turned install
// scripts off (`npm config set ignore-scripts true`: one native module failed to build, e.g.
// preact-3345's iltorb under node-gyp), every other installed package with an install script
// gets it run now, one by one (`npm rebuild --ignore-scripts=false <name>`), so packages such as
// esbuild, whose postinstall puts its binary in place, still work. A script that fails again is
// said and left out; this step never fails.
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const root = 'node_modules';
const dirs = [];
for (const d of fs.existsSync(root) ? fs.readdirSync(root) : []) {
  if (d.startsWith('.')) continue;
  if (d.startsWith('@')) for (const s of fs.readdirSync(path.join(root, d))) dirs.push(path.join(root, d, s));
  else dirs.push(path.join(root, d));
}
for (const dir of dirs) {
  let pkg;
  try { pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')); } catch (e) { continue; }
  const s = pkg.scripts || {};
  if (!(s.preinstall || s.install || s.postinstall) || !pkg.name) continue;
  try {
    execFileSync('npm', ['rebuild', '--ignore-scripts=false', pkg.name], { stdio: 'pipe', timeout: 600000 });
    console.log(`swemint: ran ${pkg.name}'s install script`);
  } catch (e) {
    console.log(`swemint: ${pkg.name}'s install script failed again; kept without it`);
  }
}
