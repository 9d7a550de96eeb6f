import { CORE_GROUP, CORE_USER, ENTERPRISE_USER, LIST_RESPONSE } from './scim.schemas.js'

/** The answers of /ServiceProviderConfig, /ResourceTypes and /Schemas (RFC 7643 §5–7): what is really supported. */

export const MAX_RESULTS = 1000
export const DEFAULT_COUNT = 100

interface AttributeOptions {
  type?: 'string' | 'boolean' | 'dateTime' | 'reference' | 'complex'
  multiValued?: boolean
  required?: boolean
  caseExact?: boolean
  mutability?: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly'
  returned?: 'always' | 'never' | 'default' | 'request'
  uniqueness?: 'none' | 'server' | 'global'
  subAttributes?: Record<string, unknown>[]
  referenceTypes?: string[]
}

function attribute(name: string, description: string, o: AttributeOptions = {}): Record<string, unknown> {
  return {
    name,
    type: o.type ?? 'string',
    multiValued: o.multiValued ?? false,
    description,
    required: o.required ?? false,
    ...(o.type === 'complex' ? {} : { caseExact: o.caseExact ?? false }),
    ...(o.subAttributes ? { subAttributes: o.subAttributes } : {}),
    ...(o.referenceTypes ? { referenceTypes: o.referenceTypes } : {}),
    mutability: o.mutability ?? 'readWrite',
    returned: o.returned ?? 'default',
    uniqueness: o.uniqueness ?? 'none',
  }
}

const multiValued = (name: string, description: string, valueDescription: string) =>
  attribute(name, description, {
    type: 'complex',
    multiValued: true,
    subAttributes: [
      attribute('value', valueDescription),
      attribute('type', 'always "work": one value is stored'),
      attribute('primary', 'always true: one value is stored', { type: 'boolean' }),
    ],
  })

const userSchema = {
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
  id: CORE_USER,
  name: 'User',
  description: 'A user of the tenant (users table)',
  attributes: [
    attribute('userName', 'username: letters, digits and . _ @ + - (3–255 characters); unique in the tenant', {
      required: true,
      uniqueness: 'server',
    }),
    attribute('name', 'first and last name', {
      type: 'complex',
      subAttributes: [
        attribute('givenName', 'first_name'),
        attribute('familyName', 'last_name'),
        attribute('formatted', 'first and last name', { mutability: 'readOnly' }),
      ],
    }),
    attribute('displayName', 'first and last name; when name is not sent, split into them'),
    multiValued('emails', 'the one email address', 'email'),
    multiValued('phoneNumbers', 'the one phone number', 'phone'),
    attribute('active', 'false deactivates the user and revokes their tokens', { type: 'boolean' }),
    attribute('preferredLanguage', 'lang_id: one of GET /api/languages (en-US, de-DE, …); another is not stored'),
    attribute('password', 'sets the password; users created without one log in by SSO or a password reset', {
      mutability: 'writeOnly',
      returned: 'never',
    }),
    attribute('groups', 'departments of the user (change them through /Groups)', {
      type: 'complex',
      multiValued: true,
      mutability: 'readOnly',
      subAttributes: [
        attribute('value', 'department id', { mutability: 'readOnly' }),
        attribute('display', 'department name', { mutability: 'readOnly' }),
        attribute('$ref', 'the Group', { type: 'reference', referenceTypes: ['Group'], mutability: 'readOnly' }),
      ],
    }),
  ],
  meta: { resourceType: 'Schema', location: `/Schemas/${CORE_USER}` },
}

const enterpriseSchema = {
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
  id: ENTERPRISE_USER,
  name: 'EnterpriseUser',
  description: 'Enterprise User extension: the staff number',
  attributes: [attribute('employeeNumber', 'staff_number')],
  meta: { resourceType: 'Schema', location: `/Schemas/${ENTERPRISE_USER}` },
}

const groupSchema = {
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
  id: CORE_GROUP,
  name: 'Group',
  description: 'A department of the tenant',
  attributes: [
    attribute('displayName', 'department name', { required: true }),
    attribute('members', 'members of the department (users only)', {
      type: 'complex',
      multiValued: true,
      subAttributes: [
        attribute('value', 'user id', { mutability: 'immutable' }),
        attribute('display', 'the user name', { mutability: 'readOnly' }),
        attribute('$ref', 'the User', { type: 'reference', referenceTypes: ['User'], mutability: 'immutable' }),
        attribute('type', 'always "User"', { mutability: 'immutable' }),
      ],
    }),
  ],
  meta: { resourceType: 'Schema', location: `/Schemas/${CORE_GROUP}` },
}

const COMMON = [
  attribute('id', 'the id, as a string', {
    caseExact: true,
    mutability: 'readOnly',
    returned: 'always',
    uniqueness: 'server',
  }),
  attribute('externalId', 'the identity provider’s id', { caseExact: true }),
]

const withCommon = <T extends { attributes: Record<string, unknown>[] }>(schema: T): T => ({
  ...schema,
  attributes: [...COMMON, ...schema.attributes],
})

export const SCHEMAS = [withCommon(userSchema), enterpriseSchema, withCommon(groupSchema)]

/** The documents with absolute locations under this service provider's base URL. */
const located = <T extends { meta: { location: string } }>(doc: T, base: string): T => ({
  ...doc,
  meta: { ...doc.meta, location: `${base}${doc.meta.location}` },
})

export function resourceTypes(base: string) {
  return [
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: 'Users of the tenant',
      schema: CORE_USER,
      schemaExtensions: [{ schema: ENTERPRISE_USER, required: false }],
      meta: { resourceType: 'ResourceType', location: '/ResourceTypes/User' },
    },
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      description: 'Departments of the tenant',
      schema: CORE_GROUP,
      schemaExtensions: [],
      meta: { resourceType: 'ResourceType', location: '/ResourceTypes/Group' },
    },
  ].map((doc) => located(doc, base))
}

export function schemas(base: string) {
  return SCHEMAS.map((doc) => located(doc, base))
}

export function serviceProviderConfig(base: string, docsUrl: string) {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    documentationUri: docsUrl,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: true },
    sort: { supported: true },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'SCIM bearer token',
        description: 'A token from POST /api/administration/scim-tokens or `workplace scim token create`',
        specUri: 'https://www.rfc-editor.org/info/rfc6750',
        primary: true,
      },
    ],
    meta: {
      resourceType: 'ServiceProviderConfig',
      location: `${base}/ServiceProviderConfig`,
    },
  }
}

export const listOf = (resources: unknown[]) => ({
  schemas: [LIST_RESPONSE],
  totalResults: resources.length,
  startIndex: 1,
  itemsPerPage: resources.length,
  Resources: resources,
})
