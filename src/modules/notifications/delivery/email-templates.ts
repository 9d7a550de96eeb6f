import Mustache from 'mustache'
import { escapeHtml } from '../../../platform/text/escape-html.js'

/**
 * Notification emails, rendered from templates (mustache: logic-less, HTML-escaping by default) as HTML
 * and plain text. Bodies arrive sanitized (`{{{bodyHtml}}}` is the sanitized HTML, never raw input).
 */
const IMMEDIATE_HTML = `<!doctype html>
<html><body style="font-family: sans-serif">
<h2>{{title}}</h2>
{{{bodyHtml}}}
<p><a href="{{link}}">{{link}}</a></p>
</body></html>`

const IMMEDIATE_TEXT = `{{title}}

{{bodyText}}

{{link}}`

const DIGEST_HTML = `<!doctype html>
<html><body style="font-family: sans-serif">
<h2>{{heading}}</h2>
<ul>
{{#items}}
<li><a href="{{link}}">{{title}}</a> <small>({{createdAt}} UTC)</small><br>{{bodyText}}</li>
{{/items}}
</ul>
{{#more}}<p>… and {{more}} more: <a href="{{allLink}}">{{allLink}}</a></p>{{/more}}
</body></html>`

const DIGEST_TEXT = `{{heading}}

{{#items}}
- {{title}} ({{createdAt}} UTC)
  {{bodyText}}
  {{link}}
{{/items}}
{{#more}}
… and {{more}} more: {{allLink}}
{{/more}}`

// HTML parts escape like every other HTML the API writes; plain-text parts are not HTML: no escaping there
const render = (template: string, view: object, html = true) =>
  Mustache.render(template, view, undefined, {
    escape: html ? (value: unknown) => escapeHtml(String(value)) : (value: unknown) => String(value),
  })

export function immediateEmail(view: { title: string; bodyHtml: string; bodyText: string; link: string }) {
  return { subject: view.title, html: render(IMMEDIATE_HTML, view), text: render(IMMEDIATE_TEXT, view, false).trim() }
}

export interface DigestItem {
  title: string
  bodyText: string
  link: string
  createdAt: string
}

export function digestEmail(view: { heading: string; items: DigestItem[]; more: number; allLink: string }) {
  const data = { ...view, more: view.more > 0 ? view.more : undefined }
  return { subject: view.heading, html: render(DIGEST_HTML, data), text: render(DIGEST_TEXT, data, false).trim() }
}
