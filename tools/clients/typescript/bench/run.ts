/**
 * grove serve from node, against pi's own storages, in one run (`npm run bench -- --scale S`):
 *
 * 1. client call latency (GroveClient) in-process (`openStore`, the native addon), over the unix
 *    socket and over TCP with a token: a small read (`GET .../leaf`) and a small append, p50 and p99;
 * 2. pi's `Session` on grove (GroveSessionRepo, in-process and through the server) against pi's `JsonlSessionRepo`: resume (repo
 *    open + buildContext) of a bushy session and of a realistic linear one, and a turn (two
 *    appendMessage + buildContext) at 1,000, 10,000 and 100,000 entries;
 * 3. throughput: 1 and 8 writer processes over 1,000 sessions at none, group and sync
 *    durability, next to the Rust `writers` benchmark (target/release/writers) when it is built.
 *
 * Sessions come from `grove gen` (pi v3 JSONL); grove imports them through `POST /v1/import`,
 * pi's JSONL storage opens the same files. `--scale` multiplies the resume sessions' sizes, the
 * latency calls and the throughput appends (1 is the issue's sizes); the turn sessions keep their
 * sizes (`--turn-max N` leaves out the larger ones, for a smoke run). The report (markdown) goes to stdout and, with `--out FILE`, to FILE.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import {
	type AgentMessage,
	buildSessionContext,
	JsonlSessionRepo,
	type Session,
	type SessionMetadata,
} from "@earendil-works/pi-agent-core";
import { NodeExecutionEnv } from "@earendil-works/pi-agent-core/node";
import { GroveClient } from "../src/client.js";
import { openStore } from "../src/native.js";
import { GroveSessionRepo } from "../src/pi.js";
import { type RunningServer, startServer } from "../test/server.js";
import {
	fmtCount,
	fmtMs,
	fmtRatio,
	generate,
	headerOf,
	groveBin,
	loadAverage,
	median,
	ms,
	now,
	quantile,
	repoRoot,
} from "./util.js";

function option(name: string): string | undefined {
	const index = process.argv.indexOf(name);
	return index >= 0 ? process.argv[index + 1] : undefined;
}

const scale = Number(option("--scale") ?? "1");
if (!(scale > 0)) throw new Error("--scale takes a positive number");
const outFile = option("--out");
/** The largest turn session (entries); 100,000 unless `--turn-max N` says less, for smoke runs. */
const turnMax = Number(option("--turn-max") ?? "100000");
const here = dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(join(tmpdir(), "grove-bench-"));
const report: string[] = [];
const started = Date.now();

function log(text: string): void {
	process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(0)} s] ${text}\n`);
}

function out(line = ""): void {
	report.push(line);
}

/** A grove server on a unix socket and on loopback TCP with a token. */
async function serve(durability: string): Promise<{ server: RunningServer; unix: string; tcp: string; token: string }> {
	process.env.GROVE_BIN = groveBin();
	const token = `bench-${process.pid}-${Math.random().toString(36).slice(2)}`;
	const server = await startServer({
		expectedListeners: 2,
		args: (store) => {
			writeFileSync(`${store}.token`, `${token}\n`, { mode: 0o600 });
			return [
				"--socket",
				join(store, "grove.sock"),
				"--listen",
				"127.0.0.1:0",
				"--token-file",
				`${store}.token`,
				"--durability",
				durability,
				"--max-body",
				String(4 * 1024 * 1024 * 1024),
			];
		},
	});
	const unix = server.urls.find((url) => url.startsWith("unix:"));
	const tcp = server.urls.find((url) => url.startsWith("http:"));
	if (!unix || !tcp) throw new Error(`expected a unix and a tcp listener, got ${server.urls.join(", ")}`);
	return { server, unix, tcp, token };
}

/** The session id in the header (first line) of a JSONL file. */
async function importFile(client: GroveClient, file: string): Promise<{ id: string; entries: number; ms: number }> {
	const t0 = now();
	const result = await client.importSession(readFileSync(file));
	return { id: result.session, entries: result.entries, ms: ms(t0, now()) };
}

// 1. Latency

async function latency(client: GroveClient, calls: number): Promise<{ read: number[]; append: number[] }> {
	const sid = (await client.createSession({ cwd: "/bench" })).id;
	await client.append(sid, { role: "user", content: "first", timestamp: 0 });
	const read: number[] = [];
	const append: number[] = [];
	const warm = Math.min(500, calls);
	for (let i = 0; i < warm + calls; i++) {
		const t0 = now();
		await client.leaf(sid);
		if (i >= warm) read.push(ms(t0, now()));
	}
	for (let i = 0; i < warm + calls; i++) {
		const t0 = now();
		await client.append(sid, { role: "user", content: `hello ${i}`, timestamp: i });
		if (i >= warm) append.push(ms(t0, now()));
	}
	client.close();
	return { read, append };
}

/**
 * A node:http server in a child process that answers every request with a fixed small JSON
 * body at once: the floor of a call from node over the same socket, whatever the server.
 */
async function startFloor(): Promise<{ url: string; stop(): void }> {
	const socket = join(work, "floor.sock");
	const code = `
		const http = require("node:http");
		http.createServer((req, res) => {
			req.resume();
			req.on("end", () => {
				res.writeHead(200, { "content-type": "application/json" });
				res.end('{"leaf":null,"id":"00000000"}');
			});
		}).listen(process.argv[1], () => console.log("ready"));`;
	const child = spawn(process.execPath, ["-e", code, socket], { stdio: ["ignore", "pipe", "inherit"] });
	await new Promise<void>((ready) => createInterface({ input: child.stdout }).once("line", () => ready()));
	return { url: `unix:${socket}`, stop: () => child.kill("SIGTERM") };
}

// 2. pi's Session on grove and on JSONL

interface Resume {
	ms: number;
	/** Of which: repo open; reading the branch (`Session.getBranch`); pi's `buildSessionContext` on it. */
	parts: [number, number, number];
	messages: number;
}

/** `Session.buildContext` in its two steps (what it does), each timed. */
async function openAndBuild(open: () => Promise<Session<SessionMetadata>>): Promise<Resume> {
	const t0 = now();
	const session = await open();
	const t1 = now();
	const branch = await session.getBranch();
	const t2 = now();
	const context = buildSessionContext(branch);
	const t3 = now();
	return { ms: ms(t0, t3), parts: [ms(t0, t1), ms(t1, t2), ms(t2, t3)], messages: context.messages.length };
}

async function groveResume(make: () => GroveClient, id: string): Promise<Resume> {
	const client = make();
	const result = await openAndBuild(() => new GroveSessionRepo(client).open({ id, createdAt: "" }));
	client.close();
	return result;
}

function jsonlRepo(file: string): JsonlSessionRepo {
	return new JsonlSessionRepo({ fs: new NodeExecutionEnv({ cwd: dirname(file) }), sessionsRoot: dirname(file) });
}

async function jsonlOpen(file: string): Promise<Session<SessionMetadata>> {
	const header = headerOf(file);
	return (await jsonlRepo(file).open({
		id: header.id,
		createdAt: header.timestamp,
		cwd: header.cwd,
		path: file,
	})) as unknown as Session<SessionMetadata>;
}

function jsonlResume(file: string): Promise<Resume> {
	return openAndBuild(() => jsonlOpen(file));
}

interface Runs {
	times: number[];
	parts: [number[], number[], number[]];
	messages: number;
	error?: string;
}

async function repeat(warmups: number, runs: number, job: () => Promise<Resume>): Promise<Runs> {
	const times: number[] = [];
	const parts: [number[], number[], number[]] = [[], [], []];
	let messages = -1;
	try {
		for (let i = 0; i < warmups + runs; i++) {
			const result = await job();
			messages = result.messages;
			if (i >= warmups) {
				times.push(result.ms);
				result.parts.forEach((part, k) => parts[k]!.push(part));
			}
		}
	} catch (error) {
		const text = error instanceof Error ? `${error.message}${error.cause instanceof Error ? `: ${error.cause.message}` : ""}` : String(error);
		return { times, parts, messages, error: text.slice(0, 200) };
	}
	return { times, parts, messages };
}

function userMessage(i: number): AgentMessage {
	return { role: "user", content: `turn ${i}: please look at src/session.rs again`, timestamp: Date.now() } as AgentMessage;
}

function assistantMessage(i: number): AgentMessage {
	return {
		role: "assistant",
		content: [{ type: "text", text: `turn ${i}: done, the test passes now.` }],
		api: "anthropic-messages",
		provider: "anthropic",
		model: "claude-sonnet-4-5",
		usage: {
			input: 100,
			output: 20,
			cacheRead: 0,
			cacheWrite: 0,
			totalTokens: 120,
			cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
		},
		stopReason: "stop",
		timestamp: Date.now(),
	} as AgentMessage;
}

async function turns(session: Session<SessionMetadata>, warmups: number, count: number): Promise<{ times: number[]; messages: number }> {
	const times: number[] = [];
	let messages = 0;
	for (let i = 0; i < warmups + count; i++) {
		const t0 = now();
		await session.appendMessage(userMessage(i));
		await session.appendMessage(assistantMessage(i));
		const context = await session.buildContext();
		if (i >= warmups) times.push(ms(t0, now()));
		messages = context.messages.length;
	}
	return { times, messages };
}

// 3. Throughput

interface Writer {
	ready: Promise<void>;
	/** Resolves with the process's CPU time in µs. */
	done: Promise<number>;
	go(): void;
}

function startWriter(url: string, appends: number, mode: WriterMode, sessions: string[]): Writer {
	const child = spawn(process.execPath, [join(here, "writer.js"), url, String(appends), mode, ...sessions], {
		stdio: ["pipe", "pipe", "inherit"],
	});
	const lines = createInterface({ input: child.stdout });
	let readyDone: () => void = () => {};
	let doneDone: (cpu: number) => void = () => {};
	const ready = new Promise<void>((resolve) => {
		readyDone = resolve;
	});
	const finished = new Promise<number>((resolve, reject) => {
		doneDone = resolve;
		child.on("exit", (code) => (code === 0 ? undefined : reject(new Error(`writer exited with ${code}`))));
	});
	lines.on("line", (line) => {
		if (line === "ready") readyDone();
		if (line.startsWith("done ")) doneDone(Number(line.slice("done ".length)));
	});
	return { ready, done: finished, go: () => child.stdin.end("go\n") };
}

/** CPU time (user + system) of a process so far, in µs, from /proc (0 where there is none). */
function processCpu(pid: number | undefined): number {
	try {
		const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
		return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
	} catch {
		return 0;
	}
}

interface Throughput {
	rate: number;
	/** Server CPU µs per append. */
	serverCpu: number;
	/** Client processes' CPU µs per append (their whole lives, connecting included). */
	clientCpu: number;
}

/** `one`: one append at a time per process; `sessions`: one in flight per session, batched. */
type WriterMode = "one" | "sessions";

async function throughput(durability: string, processes: number, appends: number, mode: WriterMode): Promise<Throughput> {
	const { server, unix } = await serve(durability);
	try {
		const client = new GroveClient({ url: unix });
		const sessions: string[] = [];
		for (let i = 0; i < 1000; i++) sessions.push((await client.createSession({ cwd: "/bench" })).id);
		client.close();
		const per = Math.floor(appends / processes);
		const writers = Array.from({ length: processes }, (_, p) =>
			startWriter(
				unix,
				per,
				mode,
				sessions.filter((_, i) => i % processes === p),
			),
		);
		await Promise.all(writers.map((w) => w.ready));
		const cpu0 = processCpu(server.process.pid);
		const t0 = now();
		for (const writer of writers) writer.go();
		const clients = await Promise.all(writers.map((w) => w.done));
		const elapsed = ms(t0, now()) / 1000;
		const total = per * processes;
		return {
			rate: total / elapsed,
			serverCpu: (processCpu(server.process.pid) - cpu0) / total,
			clientCpu: clients.reduce((a, b) => a + b, 0) / total,
		};
	} finally {
		await server.stop();
	}
}

// The run

async function main(): Promise<void> {
	const bin = groveBin();
	const version = spawnSync(bin, ["--version"], { encoding: "utf8" }).stdout.trim();
	const commit = spawnSync("git", ["-C", repoRoot, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).stdout.trim();
	out(`| run | scale ${scale} |`);
	out("|---|---|");
	out(`| date (UTC) | ${new Date().toISOString()} |`);
	out(`| commit | ${commit} (${version}) |`);
	out(`| node | ${process.version} |`);
	out(`| CPU | ${cpus()[0]?.model ?? "?"}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB |`);
	out(`| load average at the start | ${loadAverage()} |`);

	// 1 and 2 share one server at durability none (pi's JSONL storage never fsyncs), and one
	// store opened in this process (the native addon, `openStore`), also at none.
	const { server, unix, tcp, token } = await serve("none");
	const embedded = openStore(join(work, "embedded"), { durability: "none", fallback: "error" });
	try {
		const calls = Math.max(2000, Math.round(20_000 * scale));
		log(`latency: ${calls} calls each`);
		const overUnix = await latency(new GroveClient({ url: unix }), calls);
		const overTcp = await latency(new GroveClient({ url: tcp, token }), calls);
		const inProcess = await latency(embedded.withName(undefined), calls);
		const floorServer = await startFloor();
		const floor = await latency(new GroveClient({ url: floorServer.url }), calls);
		floorServer.stop();
		out();
		out(`### Client call latency (${fmtCount(calls)} sequential calls each, after 500 warm-up; durability none)`);
		out();
		out("| call | in-process p50 | in-process p99 | unix p50 | unix p99 | TCP + token p50 | TCP + token p99 | floor: node:http server, unix p50 / p99 |");
		out("|---|---|---|---|---|---|---|---|");
		for (const [name, key] of [
			["small read: `GET .../leaf`", "read"],
			["small append: `POST .../entries`", "append"],
		] as const) {
			out(
				`| ${name} | ${fmtMs(median(inProcess[key]))} | ${fmtMs(quantile(inProcess[key], 0.99))} | ${fmtMs(median(overUnix[key]))} | ${fmtMs(quantile(overUnix[key], 0.99))} | ${fmtMs(median(overTcp[key]))} | ${fmtMs(quantile(overTcp[key], 0.99))} | ${fmtMs(median(floor[key]))} / ${fmtMs(quantile(floor[key], 0.99))} |`,
			);
		}

		// Resume.
		const bushyEntries = Math.round(200_000 * scale);
		const linearEntries = Math.round(100_000 * scale);
		const fixtures = [
			{
				name: `bushy ${fmtCount(bushyEntries)}, ${fmtCount(bushyEntries / 100)} branches, active path 1,000, small`,
				file: join(work, "bushy.jsonl"),
				args: ["--entries", String(bushyEntries), "--branches", String(Math.round(bushyEntries / 100)), "--active-path", "1000", "--seed", "1"],
			},
			// Half the linear session too: node cannot hold a file over 512 Mi characters as one
			// string, which pi's JSONL storage reads the session into.
			...[linearEntries, Math.round(linearEntries / 2)].map((entries) => ({
				name: `linear ${fmtCount(entries)}, realistic, compaction every 100`,
				file: join(work, `linear-${entries}.jsonl`),
				args: ["--entries", String(entries), "--payload", "realistic", "--compaction-every", "100", "--seed", "2"],
			})),
		];
		const client = new GroveClient({ url: unix });
		out();
		out("### Resume: repo open + buildContext of pi's `Session`");
		out();
		out("grove (server): a new `GroveClient` (a new connection) + `GroveSessionRepo.open` + `Session.buildContext`, against a running server; grove (in-process): a new client of the store this process has open (`openStore`) + the same; both the median of 10 after 2 warm-up. pi: `JsonlSessionRepo.open` + `buildContext` of the same file (median of 3 after 1 warm-up).");
		out();
		out("| session | JSONL size | grove import | context messages | grove in-process | (open / branch / build) | JSONL / in-process | grove server | (open / branch / build) | pi JSONL | (open / branch / build) | JSONL / server |");
		out("|---|---|---|---|---|---|---|---|---|---|---|---|");
		for (const fixture of fixtures) {
			log(`gen ${fixture.name}`);
			generate(fixture.file, fixture.args);
			const size = readFileSync(fixture.file).byteLength;
			const imported = await importFile(client, fixture.file);
			log(`imported ${imported.entries} entries in ${fmtMs(imported.ms)}`);
			const grove = await repeat(2, 10, () => groveResume(() => new GroveClient({ url: unix }), imported.id));
			log(`grove resume ${fmtMs(median(grove.times))}`);
			await embedded.importSession(readFileSync(fixture.file));
			const local = await repeat(2, 10, () => groveResume(() => embedded.withName(undefined), imported.id));
			log(`grove in-process resume ${fmtMs(median(local.times))}`);
			const jsonl = await repeat(1, 3, () => jsonlResume(fixture.file));
			log(`jsonl resume ${fmtMs(median(jsonl.times))} ${jsonl.error ?? ""}`);
			if (local.messages !== grove.messages) {
				throw new Error(`${fixture.name}: grove's context has ${grove.messages} messages in-process, ${local.messages} from the server`);
			}
			if (!jsonl.error && jsonl.messages !== grove.messages) {
				throw new Error(`${fixture.name}: grove's context has ${grove.messages} messages, pi's ${jsonl.messages}`);
			}
			const jsonlCell = jsonl.error ? `fails: ${jsonl.error}` : fmtMs(median(jsonl.times));
			const parts = (runs: Runs) => (runs.error ? "—" : runs.parts.map((p) => fmtMs(median(p))).join(" / "));
			out(
				`| ${fixture.name} | ${(size / 2 ** 20).toFixed(1)} MiB | ${fmtMs(imported.ms)} | ${grove.messages} | ${fmtMs(median(local.times))} | ${parts(local)} | ${jsonl.error ? "—" : fmtRatio(median(jsonl.times) / median(local.times))} | ${fmtMs(median(grove.times))} | ${parts(grove)} | ${jsonlCell} | ${parts(jsonl)} | ${jsonl.error ? "—" : fmtRatio(median(jsonl.times) / median(grove.times))} |`,
			);
			rmSync(fixture.file, { force: true });
			await client.deleteSession(imported.id);
			await embedded.deleteSession(imported.id);
		}

		// Turns.
		out();
		out("### A turn: two appendMessage + buildContext on an open `Session`");
		out();
		out("Linear sessions of small entries with a compaction every 100 (so the context is about the same at every size); grove: `GroveSessionRepo` with `exclusive: true` (this process the session's only writer, as with pi's JSONL repo), in-process (`openStore`) and over the unix socket (one client); pi: `JsonlSessionRepo`, the session loaded before timing. Median and p99 of 200 turns after 20 warm-up.");
		out();
		out("| entries | grove in-process p50 | p99 | in-process / JSONL (p50) | grove server p50 | p99 | pi JSONL p50 | pi JSONL p99 | context messages | server / JSONL (p50) |");
		out("|---|---|---|---|---|---|---|---|---|---|");
		for (const [index, entries] of [1_000, 10_000, 100_000].filter((n) => n <= turnMax).entries()) {
			const file = join(work, `turns-${entries}.jsonl`);
			generate(file, ["--entries", String(entries), "--compaction-every", "100", "--seed", String(10 + index)]);
			const imported = await importFile(client, file);
			// One process per session, as with pi's JSONL repo: the exclusive adapter.
			const groveSession = await new GroveSessionRepo(client, { exclusive: true }).open({
				id: imported.id,
				createdAt: "",
			});
			const grove = await turns(groveSession, 20, 200);
			await embedded.importSession(readFileSync(file));
			const localSession = await new GroveSessionRepo(embedded, { exclusive: true }).open({ id: imported.id, createdAt: "" });
			const local = await turns(localSession, 20, 200);
			const jsonl = await turns(await jsonlOpen(file), 20, 200);
			log(`turns at ${entries}: grove in-process ${fmtMs(median(local.times))}, server ${fmtMs(median(grove.times))}, jsonl ${fmtMs(median(jsonl.times))}`);
			out(
				`| ${fmtCount(entries)} | ${fmtMs(median(local.times))} | ${fmtMs(quantile(local.times, 0.99))} | ${fmtRatio(median(local.times) / median(jsonl.times))} | ${fmtMs(median(grove.times))} | ${fmtMs(quantile(grove.times, 0.99))} | ${fmtMs(median(jsonl.times))} | ${fmtMs(quantile(jsonl.times, 0.99))} | ${grove.messages} / ${jsonl.messages} | ${fmtRatio(median(grove.times) / median(jsonl.times))} |`,
			);
			rmSync(file, { force: true });
		}
		client.close();
	} finally {
		embedded.close();
		await server.stop();
	}

	// Throughput.
	out();
	out("### Throughput: writer processes over 1,000 sessions");
	out();
	out("Each process (`bench/writer.ts`, one `GroveClient` on the unix socket) appends about 450-byte user messages over its share of 1,000 sessions; a fresh store per row. *one at a time*: round robin, each append awaited before the next, as the Rust `writers` benchmark's threads do. *per session*: every session of the share its own sequence (one append in flight per session, as an agent loop awaits each), all at once, through one `AppendBatcher` (`POST /v1/appends`, one flush per request). CPU per append: the server's during the run (/proc), and the writer processes' whole lives (node start and connection included).");
	out();
	out("| durability | processes | appends | in flight | appends/s | server CPU per append | client CPU per append |");
	out("|---|---|---|---|---|---|---|");
	for (const [durability, appends] of [
		["none", Math.round(40_000 * scale)],
		["group", Math.round(4_000 * scale)],
		["sync", Math.round(4_000 * scale)],
	] as const) {
		for (const mode of ["one", "sessions"] as const) {
			for (const processes of [1, 8]) {
				const result = await throughput(durability, processes, appends, mode);
				const label = mode === "one" ? "one at a time" : "per session";
				log(`throughput ${durability} ${processes} ${mode}: ${fmtCount(result.rate)}/s`);
				out(
					`| ${durability} | ${processes} | ${fmtCount(appends)} | ${label} | ${fmtCount(result.rate)} | ${fmtMs(result.serverCpu / 1000)} | ${fmtMs(result.clientCpu / 1000)} |`,
				);
			}
		}
	}
	const writers = join(repoRoot, "target", "release", "writers");
	out();
	const rust = spawnSync(writers, scale < 1 ? ["--quick"] : [], { encoding: "utf8" });
	if (rust.status === 0) {
		out(`The Rust \`writers\` benchmark (in-process, \`target/release/writers${scale < 1 ? " --quick" : ""}\`), same machine, right after:`);
		out();
		for (const line of rust.stdout.trim().split("\n")) out(line);
	} else {
		out(`The Rust \`writers\` benchmark did not run (${writers}: ${rust.error?.message ?? rust.stderr.slice(0, 200)}).`);
	}
	out();
	out(`load average at the end: ${loadAverage()}; wall time ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

try {
	await main();
} finally {
	rmSync(work, { recursive: true, force: true });
	const text = `${report.join("\n")}\n`;
	process.stdout.write(text);
	if (outFile) writeFileSync(outFile, text);
}
