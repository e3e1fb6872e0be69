/**
 * The grove store the drop-ins use: one client for `GROVE_URL` (and `GROVE_TOKEN`), made on
 * first use; `GROVE_URL=in-process:DIR` opens the store at DIR in this process (`openStore`).
 */
import { GroveClient } from "../src/client.js";
import { openStore } from "../src/native.js";

let shared: GroveClient | undefined;

export function groveClient(): GroveClient {
	const url = process.env.GROVE_URL;
	if (!shared && url?.startsWith("in-process:")) shared = openStore(url.slice("in-process:".length));
	shared ??= GroveClient.fromEnv();
	return shared;
}
