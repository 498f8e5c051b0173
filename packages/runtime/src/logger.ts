/** The few methods of a pino-style logger the supervisor uses. */
export interface SupervisorLogger {
  info (obj: object, msg: string): void
  warn (obj: object, msg: string): void
  error (obj: object, msg: string): void
}

const noop = (): void => {}
export const silentLogger: SupervisorLogger = { info: noop, warn: noop, error: noop }

/** A logger for people: one line per event on stderr, fields as key=value. */
export function createConsoleLogger (stream: NodeJS.WritableStream = process.stderr): SupervisorLogger {
  const write = (level: string, obj: object, msg: string): void => {
    const fields = Object.entries(obj)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ')
    stream.write(`[spindle] ${level === 'info' ? '' : level + ': '}${msg}${fields ? '  ' + fields : ''}\n`)
  }
  return {
    info: (obj, msg) => write('info', obj, msg),
    warn: (obj, msg) => write('warn', obj, msg),
    error: (obj, msg) => write('error', obj, msg),
  }
}
