/**
 * The example harness through the TypeScript client (the load is `agent-run.ts`): many generated
 * agent runs written concurrently through one server, then a sample read back and checked.
 *
 *     npx tsc -p tsconfig.bench.json
 *     node dist/bench/harness.js --url unix:/path/grove.sock --sessions 1000 --turns 50
 *
 * Options as the Python harness (tools/clients/python/examples/harness.py): `--url` (default
 * `GROVE_URL`; `GROVE_TOKEN` for TCP), `--sessions`, `--turns`, `--concurrency` (default all),
 * `--seed`, `--mode direct|batch`, `--prefix`, `--verify`, and `--in-flight` (direct mode: requests
 * in flight at once, and the pool's connections; default 32). Prints the same JSON report; a
 * mismatch in the read-back goes to stderr and the exit status is 1. It starts no server.
 *
 * Several nodes over one database (docs/scale-out.md): `--url` takes them comma-separated, and
 * `--spread session|request` says whether a session's requests stay on one node or go round the
 * nodes. `--resume` writes nothing: it times the first context read of the `--verify` sample of an
 * earlier run (same `--seed`, `--prefix`, `--turns`), for a restarted server's resume latency.
 */
import { parseArgs } from "node:util";
import { runHarness } from "./agent-run.js";

const { values } = parseArgs({
	options: {
		url: { type: "string" },
		sessions: { type: "string", default: "1000" },
		turns: { type: "string", default: "50" },
		concurrency: { type: "string", default: "0" },
		seed: { type: "string", default: "1" },
		mode: { type: "string", default: "direct" },
		prefix: { type: "string" },
		verify: { type: "string", default: "20" },
		"in-flight": { type: "string", default: "32" },
		spread: { type: "string", default: "session" },
		resume: { type: "boolean", default: false },
	},
});

function count(name: string, text: string | undefined): number {
	const value = Number(text);
	if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} takes a number >= 0, not ${text}`);
	return value;
}

const url = values.url ?? process.env.GROVE_URL;
if (!url) throw new Error("no server: pass --url unix:PATH or http://HOST:PORT, or set GROVE_URL");
const mode = values.mode;
if (mode !== "direct" && mode !== "batch") throw new Error(`--mode is direct or batch, not ${mode}`);
const spread = values.spread;
if (spread !== "session" && spread !== "request") throw new Error(`--spread is session or request, not ${spread}`);
const sessions = count("sessions", values.sessions);
const seed = count("seed", values.seed);
const { report, problems } = await runHarness({
	url,
	token: process.env.GROVE_TOKEN || undefined,
	sessions,
	turns: count("turns", values.turns),
	seed,
	concurrency: count("concurrency", values.concurrency) || Math.max(1, sessions),
	mode,
	prefix: values.prefix ?? `h${seed}-`,
	verify: count("verify", values.verify),
	inFlight: Math.max(1, count("in-flight", values["in-flight"])),
	spread,
	resume: values.resume,
});
process.stdout.write(`${JSON.stringify(report)}\n`);
for (const problem of problems) process.stderr.write(`harness: ${problem}\n`);
process.exitCode = problems.length > 0 ? 1 : 0;
