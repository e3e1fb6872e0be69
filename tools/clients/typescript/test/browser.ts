/**
 * Chromium for the HTML view's tests: the system's browser (Debian's `chromium` package), driven by
 * playwright-core. Playwright's own browser download is not used. A machine without chromium fails
 * these tests with a message saying how to install it; nothing skips them.
 */
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { type Browser, chromium } from "playwright-core";

/** Where Debian, Ubuntu and Fedora put the browser, looked at after `$CHROMIUM_BIN` and `$PATH`. */
const KNOWN = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/lib/chromium/chromium", "/snap/bin/chromium"];
/** Names looked for on `$PATH`. */
const NAMES = ["chromium", "chromium-browser"];

function executable(path: string): boolean {
	try {
		accessSync(path, constants.X_OK);
		return true;
	} catch {
		return false;
	}
}

/** The chromium binary: `$CHROMIUM_BIN`, else the first `chromium` on `$PATH`, else a known path. */
export function findChromium(): string {
	const given = process.env.CHROMIUM_BIN;
	if (given) {
		if (!executable(given)) throw new Error(`CHROMIUM_BIN=${given} is not an executable file`);
		return given;
	}
	const onPath = (process.env.PATH ?? "").split(delimiter).flatMap((dir) => (dir ? NAMES.map((n) => join(dir, n)) : []));
	const found = [...onPath, ...KNOWN].find(executable);
	if (found === undefined) {
		throw new Error(
			"the HTML view's tests need chromium and found none (looked for `chromium` and `chromium-browser` on PATH, " +
				`and at ${KNOWN.join(", ")}): install it with \`apt-get install chromium\` (Debian; .ci/run does), ` +
				"or set CHROMIUM_BIN to a chromium or chrome binary",
		);
	}
	return found;
}

/** Launches the system's chromium, headless, with command-line switches `args`. */
export function launchChromium(args: string[] = []): Promise<Browser> {
	return chromium.launch({ executablePath: findChromium(), headless: true, args });
}
