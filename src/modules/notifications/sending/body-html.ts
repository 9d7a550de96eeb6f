import sanitizeHtml from 'sanitize-html'

/** The allowlist of contract 40: everything else (tags, attributes, schemes) is stripped. */
const BODY_POLICY: sanitizeHtml.IOptions = {
  allowedTags: [
    'p',
    'br',
    'strong',
    'b',
    'em',
    'i',
    'u',
    's',
    'a',
    'ul',
    'ol',
    'li',
    'h1',
    'h2',
    'h3',
    'h4',
    'blockquote',
    'code',
    'pre',
  ],
  allowedAttributes: { a: ['href'] },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: {},
  allowedSchemesAppliedToAttributes: ['href'],
  allowProtocolRelative: false,
  disallowedTagsMode: 'discard',
}

/** Sanitizes a notification body to the allowlist (script/style contents are dropped, not shown). */
export function sanitizeNotificationBody(html: string): string {
  return sanitizeHtml(html, BODY_POLICY)
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", nbsp: ' ' }

/** A plain-text rendering of a (sanitized) body for the email's text alternative. */
export function notificationBodyText(html: string): string {
  const withBreaks = html.replace(/<\s*(br|\/p|\/li|\/h[1-4]|\/blockquote|\/pre)\s*\/?>/gi, '\n')
  const text = sanitizeHtml(withBreaks, { allowedTags: [], allowedAttributes: {} })
  return text
    .replace(/&(amp|lt|gt|quot|#39|nbsp);/g, (_, name: string) => ENTITIES[name])
    .replace(/\n{3,}/g, '\n\n')
    .trim()
}

/**
 * A notification link: an absolute http(s) URL or an app path (`/…`). Protocol-relative (`//host`),
 * backslash tricks and every other scheme (`javascript:`, `data:`) are refused.
 */
export function isAllowedNotificationUrl(url: string): boolean {
  // eslint-disable-next-line no-control-regex -- a URL with control characters is refused on purpose
  if (/[\s\u0000-\u001f\u007f]/.test(url)) return false
  if (url.startsWith('/')) return !url.startsWith('//') && !url.startsWith('/\\')
  try {
    const parsed = new URL(url)
    return (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.hostname !== ''
  } catch {
    return false
  }
}

/** App paths resolve against the front-end base URL (for email links). */
export function absoluteNotificationUrl(url: string, appUrl: string): string {
  return url.startsWith('/') ? `${appUrl}${url}` : url
}
