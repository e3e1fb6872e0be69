/**
 * A compare-and-swap writer: `node cas.mjs URL WORKER APPENDS SESSION` appends APPENDS user
 * messages to one session with `POST .../entries/if`, each expecting the leaf it last saw and
 * retrying with the leaf a lost race reports. Prints `{"id","tag","retries"}` per acknowledged
 * append.
 */
import { expectStatus, reportAcks, requester } from "./http.mjs";

const [url, worker, appends, sid] = process.argv.slice(2);
const request = requester(url, process.env.GROVE_TOKEN);
const base = `/v1/sessions/${encodeURIComponent(sid)}`;
const out = [];

await reportAcks(worker, request, out, async () => {
	let leaf = (await expectStatus(request, 200, "GET", `${base}/leaf`)).leaf;
	for (let i = 0; i < Number(appends); i++) {
		const tag = `w${worker}-${i}`;
		const entry = { role: "user", content: [{ type: "text", text: tag }], timestamp: i };
		let retries = 0;
		for (;;) {
			const answer = await expectStatus(request, 200, "POST", `${base}/entries/if`, { expectedLeaf: leaf, entry });
			if (answer.appended === true) {
				leaf = answer.id;
				out.push(JSON.stringify({ id: answer.id, tag, retries }));
				break;
			}
			if (answer.appended !== false || !("leaf" in answer)) throw new Error(`unexpected answer ${JSON.stringify(answer)}`);
			leaf = answer.leaf;
			retries++;
		}
	}
});
