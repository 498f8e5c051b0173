// Warms process.nextTick in a fresh worker thread before it takes requests.
//
// Measured reason (bench/README.md, "A worker thread's own cost"): in a worker thread, the
// object nextTick builds for each callback (`{ [async_id_symbol], [trigger_async_id_symbol],
// callback, args }`) kept going through V8's slow runtime path for computed keys
// (Runtime_DefineKeyedOwnPropertyInLiteral, map migrations) under HTTP load: about a tenth of
// the thread's time, and 3 µs of user CPU per hello-world request (11 against 8 on a process's
// main thread). The main thread starts from Node's snapshot, where those fields have long
// since seen every kind of value; a worker's first ticks see only a few, and the object's
// shape settles badly once traffic brings the rest. A few hundred ticks with the argument
// counts (undefined or an array in `args`) and the callback kinds (plain, arrow, bound
// functions) Node's own modules use, before any request, settle it: the worker then spends
// what the main thread does per request.

/** Turns of the event loop the warm-up takes: 200 took 3.5 ms here and was as good as 20,000. */
const TURNS = 200

function plain (): void {}
const arrow = (): void => {}
const bound = plain.bind(null)

/** Runs nextTick with each argument count and callback kind, a few per turn, so no tick object lives long. */
export function warmTickQueue (turns: number = TURNS): Promise<void> {
  const arg = {}
  let turn = 0
  return new Promise((resolve) => {
    const step = (): void => {
      process.nextTick(arrow)
      process.nextTick(plain, arg)
      process.nextTick(bound, arg, turn)
      process.nextTick(arrow, arg, turn, arg)
      if (++turn < turns) setImmediate(step)
      else resolve()
    }
    step()
  })
}
