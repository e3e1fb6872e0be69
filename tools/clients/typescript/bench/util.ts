/** Timing, statistics and fixtures shared by the benchmarks of `run.ts`. */
import { spawnSync } from "node:child_process";
import { closeSync, existsSync, openSync, readSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (the bench runs from `dist/bench/`, or from `bench/` under a TS loader). */
export const repoRoot = (() => {
	let dir = dirname(fileURLToPath(import.meta.url));
	while (!existsSync(join(dir, "Cargo.lock"))) {
		const up = dirname(dir);
		if (up === dir) throw new Error("no Cargo.lock above the bench: run it inside the grove repository");
		dir = up;
	}
	return dir;
})();

/** The release grove binary: `$GROVE_BIN`, else `target/release/grove`. */
export function groveBin(): string {
	const bin = process.env.GROVE_BIN ?? join(repoRoot, "target", "release", "grove");
	if (!existsSync(bin)) throw new Error(`${bin} is missing: cargo build --release -p grove-tools`);
	return resolve(bin);
}

/** Nanoseconds since an arbitrary origin. */
export function now(): bigint {
	return process.hrtime.bigint();
}

/** Milliseconds between two `now()`s. */
export function ms(start: bigint, end: bigint): number {
	return Number(end - start) / 1e6;
}

/** The q-quantile (0..1) of `values` (nearest rank). */
export function quantile(values: readonly number[], q: number): number {
	if (values.length === 0) return Number.NaN;
	const sorted = [...values].sort((a, b) => a - b);
	const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
	return sorted[rank]!;
}

export function median(values: readonly number[]): number {
	return quantile(values, 0.5);
}

/** A duration in milliseconds as µs, ms or s. */
export function fmtMs(value: number): string {
	if (!Number.isFinite(value)) return "—";
	if (value < 1) return `${(value * 1000).toFixed(0)} µs`;
	if (value < 1000) return `${value.toFixed(value < 10 ? 2 : 1)} ms`;
	return `${(value / 1000).toFixed(2)} s`;
}

/** A ratio such as `12.3×` or `0.45×`. */
export function fmtRatio(value: number): string {
	if (!Number.isFinite(value)) return "—";
	if (value >= 100) return `${Math.round(value).toLocaleString("en-US")}×`;
	return `${value.toFixed(value >= 10 ? 1 : 2)}×`;
}

export function fmtCount(value: number): string {
	return Math.round(value).toLocaleString("en-US");
}

/** Writes a generated pi JSONL session (`grove gen ... -o file`). */
export function generate(file: string, args: string[]): void {
	const result = spawnSync(groveBin(), ["gen", ...args, "-o", file], { stdio: ["ignore", "ignore", "inherit"] });
	if (result.status !== 0) throw new Error(`grove gen ${args.join(" ")} failed (${result.status ?? result.signal})`);
}

/** The load average (1, 5, 15 minutes), as /proc/loadavg says. */
export function loadAverage(): string {
	try {
		return spawnSync("cat", ["/proc/loadavg"], { encoding: "utf8" }).stdout.split(" ").slice(0, 3).join(" ");
	} catch {
		return "?";
	}
}

/** The header line of a pi session file: its id, time and working directory. */
export function headerOf(file: string): { id: string; timestamp: string; cwd: string } {
	const fd = openSync(file, "r");
	const buffer = Buffer.alloc(4096);
	const read = readSync(fd, buffer, 0, buffer.length, 0);
	closeSync(fd);
	const line = buffer.subarray(0, read).toString("utf8").split("\n")[0]!;
	return JSON.parse(line) as { id: string; timestamp: string; cwd: string };
}
