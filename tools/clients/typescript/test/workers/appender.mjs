/**
 * A writer process: `node appender.mjs URL WORKER APPENDS IN_FLIGHT SESSION...` appends APPENDS
 * user messages, the i-th to SESSION[i % n], IN_FLIGHT requests at a time, and prints one line
 * `{"sid","id","tag"}` per acknowledged append (tag `wWORKER-i` is in the message text). Any
 * failure exits 1 after printing what was acknowledged.
 */
import { expectStatus, reportAcks, requester } from "./http.mjs";

const [url, worker, appends, inFlight, ...sessions] = process.argv.slice(2);
const total = Number(appends);
const request = requester(url, process.env.GROVE_TOKEN);
let next = 0;
const out = [];

async function lane() {
	for (;;) {
		const i = next++;
		if (i >= total) return;
		const sid = sessions[i % sessions.length];
		const tag = `w${worker}-${i}`;
		const entry = { role: "user", content: [{ type: "text", text: tag }], timestamp: i };
		const answer = await expectStatus(request, 201, "POST", `/v1/sessions/${encodeURIComponent(sid)}/entries`, { entry });
		out.push(JSON.stringify({ sid, id: answer.id, tag }));
	}
}

await reportAcks(worker, request, out, () => Promise.all(Array.from({ length: Number(inFlight) }, lane)));
