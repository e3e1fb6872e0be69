/** A seeded PRNG (mulberry32) and the choices the differential test makes with it. */
export class Rand {
	private state: number;

	constructor(seed: number) {
		this.state = seed >>> 0 || 0x9e3779b9;
	}

	/** A float in [0, 1). */
	next(): number {
		this.state = (this.state + 0x6d2b79f5) >>> 0;
		let t = this.state;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	}

	/** An integer in [0, n). */
	int(n: number): number {
		return Math.floor(this.next() * n);
	}

	bool(p = 0.5): boolean {
		return this.next() < p;
	}

	pick<T>(items: readonly T[]): T {
		if (items.length === 0) throw new Error("pick from nothing");
		return items[this.int(items.length)]!;
	}

	/** `n` hex digits. */
	hex(n: number): string {
		let out = "";
		for (let i = 0; i < n; i++) out += "0123456789abcdef"[this.int(16)];
		return out;
	}

	/** Picks a key by weight. */
	weighted<K extends string>(weights: Record<K, number>): K {
		const entries = Object.entries(weights) as Array<[K, number]>;
		let total = 0;
		for (const [, weight] of entries) total += weight;
		let roll = this.next() * total;
		for (const [key, weight] of entries) {
			roll -= weight;
			if (roll < 0) return key;
		}
		return entries[entries.length - 1]![0];
	}
}
