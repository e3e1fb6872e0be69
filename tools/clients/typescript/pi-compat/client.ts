/** The grove server the drop-ins use: one client for `GROVE_URL` (and `GROVE_TOKEN`), made on first use. */
import { GroveClient } from "../src/client.js";

let shared: GroveClient | undefined;

export function groveClient(): GroveClient {
	shared ??= GroveClient.fromEnv();
	return shared;
}
