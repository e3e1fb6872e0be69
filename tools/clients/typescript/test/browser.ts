/**
 * Chromium for the HTML view's tests: the system's browser (Debian's `chromium` package), driven by
 * playwright-core. Playwright's own browser download is not used. A machine without chromium fails
 * these tests with a message saying how to install it; nothing skips them.
 */
import { accessSync, constants, readFileSync } from "node:fs";
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
	return behindWrapper(found);
}

/**
 * The browser itself when `path` is Debian's launcher script (`/usr/bin/chromium`, which `exec`s
 * `/usr/lib/chromium/chromium`): the script adds flags of its own (GPU rasterization, remote
 * extensions) and its shared-memory check fails with `[: N: unexpected operator` where `findmnt`
 * lists /dev/shm twice. The tests pass the flags they need themselves.
 */
function behindWrapper(path: string): string {
	const real = "/usr/lib/chromium/chromium";
	let head = "";
	try {
		head = readFileSync(path).subarray(0, 2).toString("latin1");
	} catch {
		return path;
	}
	return head === "#!" && executable(real) ? real : path;
}

/** What the browser printed last, kept for the message of a test whose browser died. */
const logs = new WeakMap<Browser, string[]>();
/** Lines of the browser's output kept. */
const KEPT = 40;

/**
 * Launches the system's chromium, headless, with no background networking (this machine's
 * network is closed) and no GPU, and more command-line switches `args`. Its output and how its
 * process ended are kept ([`browserLog`]), so that a browser that dies says why; closing the
 * browser stops its process.
 */
export async function launchChromium(args: string[] = []): Promise<Browser> {
	const tail: string[] = [];
	const keep = (line: string) => {
		// chromium's complaints that this machine has no D-Bus say nothing about it dying.
		if (line === "" || line.includes("dbus")) return;
		tail.push(line);
		if (tail.length > KEPT) tail.shift();
	};
	const server = await chromium.launchServer({
		executablePath: findChromium(),
		headless: true,
		args: ["--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", ...args],
	});
	const child = server.process();
	keep(`chromium pid=${child.pid ?? "?"}`);
	for (const stream of [child.stdout, child.stderr]) {
		stream?.setEncoding("utf8");
		stream?.on("data", (chunk: string) => {
			for (const line of chunk.split("\n")) keep(line);
		});
	}
	child.on("exit", (code, signal) => keep(`chromium exited: code=${code ?? "none"}, signal=${signal ?? "none"}`));
	let browser: Browser;
	try {
		browser = await chromium.connect(server.wsEndpoint());
	} catch (error) {
		await server.close();
		throw error;
	}
	browser.on("disconnected", () => void server.close());
	logs.set(browser, tail);
	return browser;
}

/** The last lines `browser` printed (its pid, its errors, how its process ended). */
export function browserLog(browser: Browser): string {
	return (logs.get(browser) ?? []).join("\n");
}
