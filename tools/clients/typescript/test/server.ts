/**
 * Starts a real `grove serve` for the tests: `$GROVE_BIN`, else `target/debug/grove` built once
 * with `cargo build -p grove-tools` from the repository root.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

let built: string | undefined;

/** The grove binary: `$GROVE_BIN`, or the workspace's debug build (built on first call). */
export function groveBin(): string {
	if (process.env.GROVE_BIN) return process.env.GROVE_BIN;
	if (built !== undefined) return built;
	const result = spawnSync("cargo", ["build", "-p", "grove-tools"], { cwd: repoRoot, stdio: "inherit" });
	if (result.status !== 0) throw new Error(`cargo build -p grove-tools failed (${result.status ?? result.signal})`);
	built = join(repoRoot, "target", "debug", "grove");
	if (!existsSync(built)) throw new Error(`${built} is missing after the build`);
	return built;
}

export interface RunningServer {
	/** Every `listening on URL` the server printed, in order. */
	urls: string[];
	store: string;
	process: ChildProcess;
	/** SIGTERM, wait for the exit (SIGKILL after 10 s), remove the store; resolves with the exit code. */
	stop(): Promise<number | null>;
}

/**
 * Runs `grove serve --store TMP ARGS...` (by default `--socket TMP/grove.sock`) and resolves once
 * it printed `expectedListeners` `listening on` lines.
 */
export async function startServer(
	options: { args?: (store: string) => string[]; expectedListeners?: number } = {},
): Promise<RunningServer> {
	const store = mkdtempSync(join(tmpdir(), "grove-ts-"));
	const args = options.args ? options.args(store) : ["--socket", join(store, "grove.sock")];
	const expected = options.expectedListeners ?? 1;
	const child = spawn(groveBin(), ["serve", "--store", store, ...args], { stdio: ["ignore", "pipe", "pipe"] });
	let stderr = "";
	child.stderr?.setEncoding("utf8");
	child.stderr?.on("data", (chunk: string) => {
		stderr += chunk;
		if (process.env.GROVE_TEST_VERBOSE) process.stderr.write(chunk);
	});
	const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
	const urls: string[] = [];
	const started = new Promise<void>((ready, fail) => {
		const timer = setTimeout(() => fail(new Error(`grove serve printed no 'listening on' in 60 s\n${stderr}`)), 60_000);
		const lines = createInterface({ input: child.stdout! });
		lines.on("line", (line) => {
			const match = /^listening on (\S+)/.exec(line.trim());
			if (!match) return;
			urls.push(match[1]!);
			if (urls.length === expected) {
				clearTimeout(timer);
				ready();
			}
		});
		child.on("error", (error) => {
			clearTimeout(timer);
			fail(error);
		});
		void exited.then((code) => {
			clearTimeout(timer);
			fail(new Error(`grove serve exited (${code}) before listening\n${stderr}`));
		});
	});
	try {
		await started;
	} catch (error) {
		child.kill("SIGKILL");
		rmSync(store, { recursive: true, force: true });
		rmSync(`${store}.token`, { force: true });
		throw error;
	}
	return {
		urls,
		store,
		process: child,
		async stop() {
			if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
			const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
			const code = await exited;
			clearTimeout(killer);
			rmSync(store, { recursive: true, force: true });
			rmSync(`${store}.token`, { force: true });
			return code;
		},
	};
}
