import type { Readable } from 'node:stream'
import type { App } from '../../platform/app-module.js'
import { Type, type Static, type TSchema } from 'typebox'
import { multipartBody } from '../../platform/http/multipart.js'
import { sendList } from '../../platform/http/list-response.js'
import { envelope, errorResponses, IdParamsSchema } from '../../platform/http/schemas.js'
import { listQuerySchema, showQuerySchema } from '../../platform/query/list-query-schema.js'
import { userResource } from './users.resource.js'
import { inlineDisposition } from './users-pictures.js'
import type { UsersImportService } from './users-import.service.js'
import type { UsersLifecycleService } from './users-lifecycle.service.js'
import {
  CreateUserBodySchema,
  CreateUserMultipartSchema,
  CSV_MAX_BYTES,
  ImportCsvBodySchema,
  ImportCsvResultSchema,
  ImportTemplateQuerySchema,
  NullEnvelopeSchema,
  PROFILE_PICTURE_MAX_BYTES,
  ProfilePictureParamsSchema,
  RestoreUserBodySchema,
  UpdateUserBodySchema,
  UpdateUserMultipartSchema,
  UserEnvelopeSchema,
  UserSchema,
} from './users.schemas.js'
import type { UsersService } from './users.service.js'

const UserListQuery = listQuerySchema(userResource)
const UserShowQuery = showQuerySchema(userResource)
interface UsersRouteDeps {
  users: UsersService
  lifecycle: UsersLifecycleService
  imports: UsersImportService
  storageDir: string
}

/** A body sent as JSON or as multipart/form-data (one schema each); typed as either. */
const jsonOrMultipart = <J extends TSchema, M extends TSchema>(json: J, multipart: M) =>
  Type.Unsafe<Static<J> | Static<M>>({
    content: { 'application/json': { schema: json }, 'multipart/form-data': { schema: multipart } },
  })

export async function usersRoutes(app: App, { users, lifecycle, imports, storageDir }: UsersRouteDeps): Promise<void> {
  const tags = ['users']
  const pictureUpload = (schema: TSchema) =>
    multipartBody({
      schema,
      files: { profile_picture: { maxBytes: PROFILE_PICTURE_MAX_BYTES } },
      storageDir,
    })

  app.get(
    '/api/users',
    {
      schema: {
        tags,
        summary: 'Users (basic fields); filter[text] searches names, username, email, staff number',
        querystring: UserListQuery,
        response: { 200: Type.Array(UserSchema), ...errorResponses },
      },
    },
    async (request, reply) => sendList(reply, await users.listUsers(request.actor, request.query)),
  )

  app.get(
    '/api/users/deleted',
    {
      schema: {
        tags,
        summary: 'Soft-deleted users, blacked-out ones included',
        querystring: UserListQuery,
        response: { 200: Type.Array(UserSchema), ...errorResponses },
      },
    },
    async (request, reply) => sendList(reply, await users.listDeletedUsers(request.actor, request.query)),
  )

  app.get(
    '/api/users/current',
    {
      schema: {
        tags,
        summary: 'The authenticated user',
        querystring: UserShowQuery,
        response: { 200: UserSchema, ...errorResponses },
      },
    },
    (request) => users.getCurrentUser(request.actor, request.query),
  )

  app.get(
    '/api/users/import-template',
    {
      schema: {
        tags,
        summary: 'CSV import template (one header row)',
        querystring: ImportTemplateQuerySchema,
        produces: ['text/csv'],
        response: {
          200: {
            description: 'text/csv; charset=UTF-8 attachment',
            content: { 'text/csv': { schema: Type.String() } },
          },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const csv = imports.importTemplate(request.actor, request.query)
      return reply
        .type('text/csv; charset=UTF-8')
        .header('content-disposition', 'attachment; filename="users-import-template.csv"')
        .send(csv)
    },
  )

  app.get(
    '/api/users/:id',
    {
      schema: {
        tags,
        summary: 'One user, deleted included; extended fields for self, users.viewDetails, users.administrate',
        params: IdParamsSchema,
        querystring: UserShowQuery,
        response: { 200: UserSchema, ...errorResponses },
      },
    },
    (request) => users.getUser(request.actor, request.params.id, request.query),
  )

  app.post(
    '/api/users',
    {
      schema: {
        tags,
        summary: 'Create a user (JSON, or multipart/form-data with a profile_picture file)',
        body: jsonOrMultipart(CreateUserBodySchema, CreateUserMultipartSchema),
        response: { 201: UserEnvelopeSchema, ...errorResponses },
      },
      preValidation: pictureUpload(CreateUserMultipartSchema),
      config: { bodyRules: (request) => users.passwordProblems(request.actor, request.body) },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(envelope(await users.createUser(request.actor, request.body, request.uploads?.profile_picture))),
  )

  app.post(
    '/api/users/csv',
    {
      config: { rateLimit: 'expensive' },
      schema: {
        tags,
        summary: 'Dry-run parse of a user CSV import (persists nothing)',
        consumes: ['multipart/form-data'],
        body: ImportCsvBodySchema,
        response: { 200: ImportCsvResultSchema, ...errorResponses },
      },
      preValidation: multipartBody({
        schema: ImportCsvBodySchema,
        files: { user_data_csv: { maxBytes: CSV_MAX_BYTES } },
        storageDir,
      }),
    },
    async (request) =>
      envelope(await imports.parseUsersCsv(request.actor, request.body, request.uploads?.user_data_csv)),
  )

  app.put(
    '/api/users/:id',
    {
      schema: {
        tags,
        summary: 'Update a user (JSON, or multipart/form-data with a profile_picture file)',
        params: IdParamsSchema,
        body: jsonOrMultipart(UpdateUserBodySchema, UpdateUserMultipartSchema),
        response: { 200: UserEnvelopeSchema, ...errorResponses },
      },
      preValidation: pictureUpload(UpdateUserMultipartSchema),
      config: { bodyRules: (request) => users.passwordProblems(request.actor, request.body) },
    },
    async (request) =>
      envelope(
        await users.updateUser(request.actor, request.params.id, request.body, request.uploads?.profile_picture),
      ),
  )

  app.post(
    '/api/users/logout/:id',
    {
      schema: {
        tags,
        summary: 'Mark a user for logout',
        params: IdParamsSchema,
        response: { 200: UserEnvelopeSchema, ...errorResponses },
      },
    },
    async (request) => envelope(await lifecycle.logoutUser(request.actor, request.params.id)),
  )

  app.post(
    '/api/users/restore/:id',
    {
      schema: {
        tags,
        summary:
          "Restore a soft-deleted user (the user counts again: past the organisation's users quota, 403 `quota_exceeded`)",
        params: IdParamsSchema,
        body: Type.Union([RestoreUserBodySchema, Type.Null()], { description: 'optional' }),
        response: { 200: UserEnvelopeSchema, ...errorResponses },
      },
    },
    async (request) => envelope(await lifecycle.restoreUser(request.actor, request.params.id, request.body ?? {})),
  )

  app.delete(
    '/api/users/blackout/:id',
    {
      schema: {
        tags,
        summary: 'Irreversibly anonymize a user',
        params: IdParamsSchema,
        response: { 200: UserEnvelopeSchema, ...errorResponses },
      },
    },
    async (request) => envelope(await lifecycle.blackOutUser(request.actor, request.params.id)),
  )

  app.post(
    '/api/users/:id/erasure',
    {
      schema: {
        tags,
        summary: 'Erase a user (GDPR Art. 17): the black-out under a clearer name',
        description:
          'Irreversible. Every personal value of every table and the profile picture are deleted or pseudonymised; authored content stays under the pseudonym "Former employee <code>". Same rules and answer as `DELETE /api/users/blackout/{id}`.',
        params: IdParamsSchema,
        response: { 200: UserEnvelopeSchema, ...errorResponses },
      },
    },
    async (request) => envelope(await lifecycle.blackOutUser(request.actor, request.params.id)),
  )

  app.delete(
    '/api/users/:id',
    {
      schema: {
        tags,
        summary: 'Soft-delete a user',
        params: IdParamsSchema,
        response: { 200: NullEnvelopeSchema, ...errorResponses },
      },
    },
    async (request) => envelope(await lifecycle.deleteUser(request.actor, request.params.id)),
  )

  // the optional trailing file name is two documented routes (an OpenAPI path has no optional segment)
  const pictureResponse = {
    200: {
      description: 'the image; Content-Type from its magic bytes',
      content: { 'image/*': { schema: Type.Unsafe<Readable>(Type.String({ format: 'binary' })) } },
    },
    ...errorResponses,
  }
  const pictureRoutes = [
    ['/users/:id/profile-picture', IdParamsSchema, 'users.profilePicture'],
    ['/users/:id/profile-picture/:fileName', ProfilePictureParamsSchema, 'users.profilePictureNamed'],
  ] as const
  for (const [url, params, operationId] of pictureRoutes)
    app.get(
      url,
      {
        schema: {
          tags,
          operationId,
          summary: 'Profile-picture bytes (self or users.view)',
          params,
          response: pictureResponse,
        },
      },
      async (request, reply) => {
        const { id } = request.params
        const fileName = 'fileName' in request.params ? request.params.fileName : undefined
        const picture = await users.getProfilePicture(request.actor, id, fileName || undefined)
        return reply
          .type(picture.mime)
          .headers({
            'content-length': picture.size,
            'content-disposition': inlineDisposition(picture.fileName),
            'cache-control': 'private, max-age=3600',
            'content-security-policy': "default-src 'none'; sandbox",
          })
          .send(picture.stream)
      },
    )
}
