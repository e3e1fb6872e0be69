/**
 * A large context into JS objects: `client.context(sid)` of a session whose context is about
 * `--mb` MiB of JSON (default 128), on a store opened in this process (`openStore`), against
 * `JSON.parse` of the same bytes (what reading them from a file would cost at best):
 *
 *     npm run build:native && npx tsc -p tsconfig.bench.json \
 *       && node --expose-gc dist/bench/context-size.js --mb 128
 *
 * Each measurement runs in a fresh node process (`--expose-gc`), three times, the median
 * reported: the time of the call, the heap the result holds once made (after a collection),
 * and the peak resident memory the call added to the process (its `maxRSS` over the resident
 * memory before the call). grove's long strings are external (outside V8's heap), so its heap
 * figure leaves them out; the peak is compared with the heap `JSON.parse`'s values hold. The
 * report (markdown) goes to stdout.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { openStore } from "../src/native.js";

interface Measured {
	ms: number;
	heapBytes: number;
	peakBytes: number;
}

function option(name: string): string | undefined {
	const index = process.argv.indexOf(name);
	return index >= 0 ? process.argv[index + 1] : undefined;
}

function gc(): void {
	const collect = (globalThis as { gc?: () => void }).gc;
	if (!collect) throw new Error("run with node --expose-gc");
	collect();
}

/** `make` timed, with the heap its result holds and the peak memory it added. */
async function measure(make: () => unknown): Promise<Measured> {
	gc();
	const heap0 = process.memoryUsage().heapUsed;
	const rss0 = process.memoryUsage().rss;
	const t0 = process.hrtime.bigint();
	const result = await make();
	const ms = Number(process.hrtime.bigint() - t0) / 1e6;
	gc();
	const heapBytes = process.memoryUsage().heapUsed - heap0;
	const peakBytes = process.resourceUsage().maxRSS * 1024 - rss0;
	if (result === undefined) throw new Error("nothing made");
	return { ms, heapBytes, peakBytes };
}

async function child(kind: string, where: string, sid: string): Promise<void> {
	let measured: Measured;
	if (kind === "grove") {
		const client = openStore(where, { durability: "none", fallback: "error" });
		await client.leaf(sid); // the store open and warm, as a resumed session's would be
		measured = await measure(() => client.context(sid));
		client.close();
	} else {
		const text = readFileSync(where, "utf8");
		measured = await measure(() => JSON.parse(text));
	}
	process.stdout.write(`${JSON.stringify(measured)}\n`);
}

function median(values: number[]): number {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.floor(sorted.length / 2)] as number;
}

async function main(): Promise<void> {
	const mb = Number(option("--mb") ?? "128");
	const work = mkdtempSync(join(tmpdir(), "grove-context-"));
	try {
		const dir = join(work, "store");
		const client = openStore(dir, { durability: "none", fallback: "error" });
		const { id: sid } = await client.createSession();
		// Messages of 64 KiB of text each (a tool result, a file read), user and assistant in turn.
		const piece = 64 << 10;
		const count = Math.ceil((mb << 20) / piece);
		for (let i = 0; i < count; i += 64) {
			const batch = Array.from({ length: Math.min(64, count - i) }, (_, k) => {
				const text = `${i + k} ${"lorem ipsum dolor sit amet ".repeat(piece / 27)}`;
				return (i + k) % 2 === 0
					? { role: "user", content: text }
					: { role: "assistant", content: [{ type: "text", text }] };
			});
			await client.appendMany(sid, batch);
		}
		const text = JSON.stringify(await client.context(sid));
		client.close();
		const file = join(work, "context.json");
		writeFileSync(file, text);
		const script = fileURLToPath(import.meta.url);
		const runs = (kind: string, where: string): Measured[] =>
			Array.from({ length: 3 }, () => {
				const run = spawnSync(process.execPath, ["--expose-gc", "--max-old-space-size=8192", script, "--child", kind, where, sid], {
					encoding: "utf8",
					maxBuffer: 1 << 20,
				});
				if (run.status !== 0) throw new Error(`${kind}: ${run.stderr}`);
				return JSON.parse(run.stdout.trim()) as Measured;
			});
		const grove = runs("grove", dir);
		const parse = runs("parse", file);
		const row = (name: string, m: Measured[]) =>
			`| ${name} | ${median(m.map((x) => x.ms)).toFixed(0)} ms | ${(median(m.map((x) => x.heapBytes)) / 2 ** 20).toFixed(0)} MiB | ${(median(m.map((x) => x.peakBytes)) / 2 ** 20).toFixed(0)} MiB |`;
		const ratio = median(grove.map((x) => x.ms)) / median(parse.map((x) => x.ms));
		// The result's size: what JSON.parse's values hold in V8's heap (grove's long strings are
		// external, outside the heap, so its own heap figure leaves them out).
		const peak = median(grove.map((x) => x.peakBytes)) / median(parse.map((x) => x.heapBytes));
		console.log(`context of ${count.toLocaleString("en")} messages, ${(text.length / 2 ** 20).toFixed(0)} MiB of JSON; node ${process.version}; median of 3 fresh processes`);
		console.log();
		console.log("| read | time | heap held by the result | peak memory added |");
		console.log("|---|---|---|---|");
		console.log(row("grove in-process: `client.context(sid)`", grove));
		console.log(row("`JSON.parse` of the same bytes (already in memory)", parse));
		console.log();
		console.log(`grove / JSON.parse: ${ratio.toFixed(2)}x the time; grove's peak is ${peak.toFixed(2)}x the result (JSON.parse's heap)`);
	} finally {
		rmSync(work, { recursive: true, force: true });
	}
}

const childAt = process.argv.indexOf("--child");
if (childAt >= 0) {
	const [kind, where, sid] = process.argv.slice(childAt + 1);
	await child(kind as string, where as string, sid as string);
} else {
	await main();
}
