// swemint's karma wrapper (agents/ecosystems/node/karma.py writes it into the image): loads the
// project's own karma config, then runs it once in headless Chromium (or Firefox) with swemint's
// reporter, on the touched spec files only where the config lists them by pattern.
// Environment: SWEMINT_KARMA_CONFIG (the project's config, absolute), SWEMINT_KARMA_FILES (JSON
// list of absolute spec paths), SWEMINT_KARMA_BROWSER (ChromeHeadless | FirefoxHeadless),
// SWEMINT_KARMA_REPORT (where the JSON report goes).
/* eslint-disable */
var path = require('path');
var fs = require('fs');

var projectConfig = process.env.SWEMINT_KARMA_CONFIG;
var projectDir = path.dirname(projectConfig);
var touched = JSON.parse(process.env.SWEMINT_KARMA_FILES || '[]');
var reportPath = process.env.SWEMINT_KARMA_REPORT;

function swemintReporter(baseReporterDecorator) {
	baseReporterDecorator(this);
	var results = [];
	var errors = [];
	this.onBrowserError = function (browser, error) {
		errors.push(String(error && error.message ? error.message : error).slice(0, 2000));
	};
	this.onSpecComplete = function (browser, r) {
		results.push({ suite: r.suite || [], description: r.description, success: !!r.success,
			skipped: !!r.skipped, pending: !!r.pending, log: (r.log || []).join('\n').slice(0, 2000) });
	};
	this.onRunComplete = function (browsers, summary) {
		fs.mkdirSync(path.dirname(reportPath), { recursive: true });
		fs.writeFileSync(reportPath, JSON.stringify({ swemint_karma: 1, results: results, errors: errors,
			summary: { success: summary.success, failed: summary.failed, skipped: summary.skipped || 0,
				error: !!summary.error, disconnected: !!summary.disconnected } }));
		process.stdout.write('swemint karma: ' + summary.success + ' passed, ' + summary.failed + ' failed, ' +
			errors.length + ' browser errors\n');
	};
}
swemintReporter.$inject = ['baseReporterDecorator'];

function matcher() {
	try {
		var mm = require(require.resolve('minimatch', { paths: [projectDir] }));
		return typeof mm === 'function' ? mm : mm.minimatch;
	} catch (e) {
		return null;
	}
}

function selectFiles(files, basePath) {
	var mm = matcher();
	if (!mm || !touched.length) return files;
	var hit = false;
	var out = [];
	files.forEach(function (entry) {
		var pattern = typeof entry === 'string' ? entry : entry && entry.pattern;
		if (typeof pattern !== 'string') { out.push(entry); return; }
		var abs = path.isAbsolute(pattern) ? pattern : path.resolve(basePath, pattern);
		var mine = touched.filter(function (f) {
			var rel = path.relative(basePath, f);
			return mm(f, abs) || mm(rel, pattern) || mm('/' + rel, pattern);
		});
		if (!mine.length) { out.push(entry); return; }
		hit = true;
		mine.forEach(function (f) {
			out.push(typeof entry === 'string' ? f : Object.assign({}, entry, { pattern: f }));
		});
	});
	return hit ? out : files;
}

// karma's default `plugins: ['karma-*']` requires every karma-* package installed; one that
// cannot load here (a cloud launcher whose binary download was skipped) stops the whole run.
// The glob is expanded to the packages that do load; the others are named on stderr.
function loadablePlugins(plugins) {
	var out = [];
	plugins.forEach(function (p) {
		if (typeof p !== 'string' || p.indexOf('*') < 0) { out.push(p); return; }
		var modules;
		try {
			modules = path.resolve(path.dirname(require.resolve('karma/package.json', { paths: [projectDir] })), '..');
		} catch (e) { out.push(p); return; }
		var prefix = p.replace(/\*.*$/, '');
		fs.readdirSync(modules).filter(function (n) { return n.indexOf(prefix) === 0 && n !== 'karma'; })
			.forEach(function (n) {
				try { out.push(require(path.join(modules, n))); }
				catch (e) { process.stderr.write('swemint karma: plugin ' + n + ' does not load (' + e.message.split('\n')[0] + ')\n'); }
			});
	});
	return out;
}

module.exports = function (config) {
	var base = require(projectConfig);
	base = base && base.default ? base.default : base;
	if (typeof base === 'function') base(config); else config.set(base);
	var basePath = path.resolve(projectDir, config.basePath || '');
	var browser = process.env.SWEMINT_KARMA_BROWSER || 'ChromeHeadless';
	var launchers = Object.assign({}, config.customLaunchers);
	launchers.SwemintHeadless = browser === 'FirefoxHeadless'
		? { base: 'FirefoxHeadless' }
		: { base: 'ChromeHeadless', flags: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] };
	config.set({
		basePath: basePath,
		files: selectFiles(config.files || [], basePath),
		browsers: ['SwemintHeadless'],
		customLaunchers: launchers,
		reporters: ['swemint'],
		plugins: loadablePlugins(config.plugins || ['karma-*']).concat([{ 'reporter:swemint': ['type', swemintReporter] }]),
		singleRun: true,
		autoWatch: false,
		restartOnFileChange: false,
		concurrency: 1,
		captureTimeout: Math.max(config.captureTimeout || 0, 300000),
		browserNoActivityTimeout: Math.max(config.browserNoActivityTimeout || 0, 300000)
	});
};
