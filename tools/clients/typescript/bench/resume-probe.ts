/**
 * The resume of one session alone, in this process (`openStore`) and by pi's JSONL storage:
 * `GroveSessionRepo.open` + `Session.getBranch` + `buildSessionContext`, the median of many,
 * with its parts, for a quick look at one change (`bench/run.ts` measures the whole table).
 *
 *     npx tsc -p tsconfig.bench.json
 *     node dist/bench/resume-probe.js STORE SESSION_ID [JSONL_FILE] [--runs N]
 */
import { dirname } from "node:path";
import { buildSessionContext, JsonlSessionRepo, type Session, type SessionMetadata } from "@earendil-works/pi-agent-core";
import { NodeExecutionEnv } from "@earendil-works/pi-agent-core/node";
import { openStore } from "../src/native.js";
import { GroveSessionRepo } from "../src/pi.js";
import { headerOf } from "./util.js";

const runsAt = process.argv.indexOf("--runs");
const [store, id, file] = process.argv.slice(2).filter((a, i) => !a.startsWith("--") && i + 2 !== runsAt + 1);
const runs = runsAt > 0 ? Number(process.argv[runsAt + 1]) : 50;
if (!store || !id) throw new Error("usage: resume-probe STORE SESSION_ID [JSONL_FILE] [--runs N]");

const now = () => process.hrtime.bigint();
const ms = (a: bigint, b: bigint) => Number(b - a) / 1e6;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function measure(label: string, n: number, open: () => Promise<Session<SessionMetadata>>): Promise<number> {
	const parts: [number[], number[], number[]] = [[], [], []];
	const total: number[] = [];
	let messages = 0;
	for (let i = 0; i < n + 2; i++) {
		const t0 = now();
		const session = await open();
		const t1 = now();
		const branch = await session.getBranch();
		const t2 = now();
		messages = buildSessionContext(branch).messages.length;
		const t3 = now();
		if (i < 2) continue;
		parts[0].push(ms(t0, t1));
		parts[1].push(ms(t1, t2));
		parts[2].push(ms(t2, t3));
		total.push(ms(t0, t3));
	}
	const m = median(total);
	console.log(
		`${label}: ${m.toFixed(3)} ms (open ${median(parts[0]).toFixed(3)} / branch ${median(parts[1]).toFixed(3)} / build ${median(parts[2]).toFixed(3)}), ${messages} messages`,
	);
	return m;
}

const embedded = openStore(store, { durability: "none", fallback: "error" });
const grove = await measure("grove in-process", runs, async () => {
	const client = embedded.withName(undefined);
	return (await new GroveSessionRepo(client).open({ id, createdAt: "" })) as unknown as Session<SessionMetadata>;
});
embedded.close();
if (file) {
	const header = headerOf(file);
	const repo = new JsonlSessionRepo({ fs: new NodeExecutionEnv({ cwd: dirname(file) }), sessionsRoot: dirname(file) });
	const pi = await measure("pi JSONL", 3, async () => {
		return (await repo.open({ id: header.id, createdAt: header.timestamp, cwd: header.cwd, path: file })) as unknown as Session<SessionMetadata>;
	});
	console.log(`pi / grove: ${(pi / grove).toFixed(0)}x`);
}
