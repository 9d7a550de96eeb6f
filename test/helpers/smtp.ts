import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'

/** A real SMTP server on 127.0.0.1 that keeps every message it receives (raw RFC 5322 text). */
export async function startSmtpServer(): Promise<{
  url: string
  port: number
  received: string[]
  close: () => Promise<void>
}> {
  const received: string[] = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, done) {
      let raw = ''
      stream.on('data', (chunk: Buffer) => {
        raw += chunk.toString('utf8')
      })
      stream.on('end', () => {
        received.push(raw)
        done()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.server.address() as AddressInfo).port
  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
