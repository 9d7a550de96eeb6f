import nodemailer from 'nodemailer'
import type { Logger } from 'pino'

export interface MailMessage {
  to: string
  subject: string
  html: string
  text: string
}

/** Sends through SMTP when configured; otherwise `transport` is null and callers store the message. */
export interface Mailer {
  readonly transport: 'smtp' | 'store'
  send(message: MailMessage): Promise<void>
}

/** Builds the mailer once per worker (nodemailer pools nothing until the first send). */
export function createMailer(options: { smtpUrl: string | undefined; appUrl: string; log: Logger }): Mailer {
  const host = (() => {
    try {
      return new URL(options.appUrl).hostname || 'localhost'
    } catch {
      return 'localhost'
    }
  })()
  const from = `Workplace <no-reply@${host.includes('.') ? host : `${host}.invalid`}>`
  if (!options.smtpUrl) {
    return {
      transport: 'store',
      async send(message) {
        options.log.info(
          { to: message.to, subject: message.subject },
          'email stored in outbound_messages (SMTP_URL not set)',
        )
      },
    }
  }
  const transporter = nodemailer.createTransport(options.smtpUrl)
  return {
    transport: 'smtp',
    async send(message) {
      await transporter.sendMail({
        from,
        to: message.to,
        subject: message.subject,
        html: message.html,
        text: message.text,
      })
    },
  }
}
