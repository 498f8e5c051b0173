import { EventEmitter } from 'node:events'
import type { IncomingMessage, Server } from 'node:http'
import type { Duplex } from 'node:stream'

/** Node's server (22.21+, 24.9+) asks this whether a request with an Upgrade header becomes an 'upgrade' event. */
type UpgradeServer = Server & { shouldUpgradeCallback: (this: Server, req: IncomingMessage) => boolean }

export interface HmrUpgrades {
  /** Where the dev server listens for 'upgrade' events, instead of on Fastify's server. */
  readonly emitter: EventEmitter
  /** Destroys the open HMR websockets and leaves new upgrade requests to Fastify. */
  close (): void
}

/**
 * Gives the dev server the upgrade requests of its HMR websocket (`isHmr`), and no others.
 *
 * Once an 'upgrade' listener is on a server, Node hands it every request that carries an
 * Upgrade header (`curl --http2` sends `Upgrade: h2c`), and a dev server's listener ignores
 * what is not its HMR: such a request would never be answered. So the dev server listens on
 * `emitter`, and the server upgrades only its HMR requests; any other request with an Upgrade
 * header goes to the app's own upgrade listeners (@fastify/websocket) as it would without the
 * dev server, or, when there are none, to Fastify's routes like any request.
 */
export function hmrUpgrades (server: Server, isHmr: (req: IncomingMessage) => boolean): HmrUpgrades {
  const emitter = new EventEmitter()
  const sockets = new Set<Duplex>()
  let open = true
  const taken = (req: IncomingMessage): boolean => open && emitter.listenerCount('upgrade') > 0 && isHmr(req)

  const forward = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    if (!taken(req)) return
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
    emitter.emit('upgrade', req, socket, head)
  }
  const upgradeServer = server as UpgradeServer
  const decideAsBefore = upgradeServer.shouldUpgradeCallback
  upgradeServer.shouldUpgradeCallback = function (req) {
    if (taken(req)) return true
    // Not the dev server's: Node's own decision, as if `forward` were not listening.
    const others = server.listeners('upgrade').some((listener) => listener !== forward)
    return others && decideAsBefore.call(this, req)
  }
  server.on('upgrade', forward)

  return {
    emitter,
    close () {
      open = false
      // server.close() waits for every socket it accepted, upgraded ones included: an open
      // browser tab would hold up fastify.close() for good.
      for (const socket of sockets) socket.destroy()
    },
  }
}
