// The responses a worker has in flight, which its drain tells to close their connections and
// waits for. Kept in an array of slots, each response carrying its slot's index, rather than
// in a Set: a Set hashes every new response by identity, and on hello-world under a closed
// loop of 100 connections its add and delete took 3.3 % of the worker's busy time (CPU
// profile, `node bench/profile.mjs --workload hello --config spindle-1 --connections 100`;
// the delete's line alone), against 0.3 % for the slots.

/** Where a response sits in its InflightResponses. */
const kSlot = Symbol('spindle.inflightSlot')

type Slotted = object & { [kSlot]?: number }

export class InflightResponses<T extends object> {
  readonly #slots: Array<T | undefined> = []
  /** Indexes of empty slots, reused last in, first out. */
  readonly #free: number[] = []
  #size = 0

  get size (): number { return this.#size }

  add (item: T): void {
    if ((item as Slotted)[kSlot] !== undefined) return
    const slot = this.#free.length > 0 ? this.#free.pop()! : this.#slots.length
    this.#slots[slot] = item;
    (item as Slotted)[kSlot] = slot
    this.#size++
  }

  /** Removes `item`; a second call, or one for an item never added, does nothing. */
  delete (item: T): void {
    const slot = (item as Slotted)[kSlot]
    if (slot === undefined || this.#slots[slot] !== item) return
    this.#slots[slot] = undefined;
    (item as Slotted)[kSlot] = undefined
    this.#free.push(slot)
    this.#size--
  }

  * [Symbol.iterator] (): IterableIterator<T> {
    for (const item of this.#slots) if (item !== undefined) yield item
  }
}
