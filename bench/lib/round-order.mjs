// The order in which a round runs its configurations. The machine's speed drifts within a
// run (by tens of percent over minutes on a shared 2-core VM), and in a fixed order the
// configuration that runs last in every round always meets the later, possibly slower
// minutes. Every other round runs them in reverse (A B C, C B A, A B C, ...), so a drift that
// is steady over two rounds falls on every configuration alike, and no configuration always
// follows the same one (whose leftovers, the page cache, the kernel's socket state, it would
// otherwise always inherit).

/** `items` in the order of round `round` (1-based): as given in odd rounds, reversed in even ones. */
export function roundOrder (items, round) {
  return round % 2 === 0 ? [...items].reverse() : [...items]
}
