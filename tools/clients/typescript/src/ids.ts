/** Ids made on the client: session ids (UUID v7, like pi's) and short entry ids (8 hex digits, like pi's). */
import { randomBytes } from "node:crypto";

/** A UUID v7: 48 bits of Unix milliseconds, then random bits. */
export function uuidv7(now: number = Date.now()): string {
	const bytes = randomBytes(16);
	let ms = Math.max(0, Math.floor(now));
	for (let i = 5; i >= 0; i--) {
		bytes[i] = ms % 256;
		ms = Math.floor(ms / 256);
	}
	bytes[6] = (bytes[6]! & 0x0f) | 0x70;
	bytes[8] = (bytes[8]! & 0x3f) | 0x80;
	const hex = bytes.toString("hex");
	return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** 8 random hex digits, the shape of pi's entry ids. */
export function shortEntryId(): string {
	return randomBytes(4).toString("hex");
}
