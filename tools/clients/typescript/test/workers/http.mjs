/**
 * The few lines of node:http a worker process needs to talk to grove serve: plain JavaScript, so
 * a child process runs it with `node` alone (no TypeScript build, no client import).
 */
import * as http from "node:http";

/** `unix:/path` or `http://host:port` as node:http request options. */
export function endpoint(url) {
	if (url.startsWith("unix:")) return { socketPath: url.slice("unix:".length) };
	const parsed = new URL(url);
	return { host: parsed.hostname, port: Number(parsed.port) };
}

/** A request function over one keep-alive agent; resolves `{status, body}` with the body parsed. */
export function requester(url, token) {
	const target = endpoint(url);
	const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
	function request(method, path, body) {
		const payload = body === undefined ? undefined : JSON.stringify(body);
		const headers = {};
		if (payload !== undefined) {
			headers["content-type"] = "application/json";
			headers["content-length"] = Buffer.byteLength(payload);
		}
		if (token) headers.authorization = `Bearer ${token}`;
		return new Promise((resolve, reject) => {
			const req = http.request({ ...target, method, path, headers, agent }, (res) => {
				res.setEncoding("utf8");
				let text = "";
				res.on("data", (chunk) => {
					text += chunk;
				});
				res.on("end", () => {
					let parsed;
					try {
						parsed = text === "" ? undefined : JSON.parse(text);
					} catch {
						reject(new Error(`${method} ${path}: HTTP ${res.statusCode}, not JSON: ${text.slice(0, 200)}`));
						return;
					}
					resolve({ status: res.statusCode, body: parsed });
				});
				res.on("error", reject);
			});
			req.on("error", reject);
			req.end(payload);
		});
	}
	request.close = () => agent.destroy();
	return request;
}

/** `request` that throws on any status but `expected`. */
export async function expectStatus(request, expected, method, path, body) {
	const answer = await request(method, path, body);
	if (answer.status !== expected) {
		throw new Error(`${method} ${path}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
	}
	return answer.body;
}

/**
 * Runs a worker's work, then prints its acknowledged lines (one JSON line each): after a
 * failure too, before exiting 1 with the error on stderr, so the test can check what was
 * acknowledged.
 */
export async function reportAcks(worker, request, out, work) {
	try {
		await work();
	} catch (error) {
		process.stdout.write(out.join("\n") + "\n");
		process.stderr.write(`worker ${worker}: ${error.stack ?? error}\n`);
		process.exit(1);
	}
	request.close();
	process.stdout.write(out.join("\n") + "\n");
}
