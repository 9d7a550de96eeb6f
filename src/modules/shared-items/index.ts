import type { AppModule } from '../../platform/app-module.js'
import { sharedItemGrantTarget } from './shared-items.access.js'
import { createSharedItemResolver } from './shared-items.resolve.js'
import { createAccessRecorder } from './shared-items.access-log.js'
import { sharedItemsRoutes } from './shared-items.routes.js'
import { createSharedItemsService } from './shared-items.service.js'
import { sharedItemSyncSource } from './shared-items.sync.js'

// Public surface for content modules: share target contract, grant tokens.
export {
  lookupShareTarget,
  parseShareTargetId,
  targetClaim,
  type ShareTargetDef,
  type ShareTargetId,
  type ShareTargetIdType,
  type ShareTargetUrls,
  type ShareTargetUrlContext,
} from './share-targets.js'
export {
  issueGrantToken,
  verifyGrantToken,
  actorFromGrantToken,
  grantTokenActorFor,
  grantCoversTarget,
  GRANT_TOKEN_TTL_SECONDS,
  type VerifiedGrant,
  type GrantTokenActor,
  type IssueGrantTokenInput,
  type VerifyGrantTokenOptions,
} from './grant-tokens.js'
export { SHARED_ITEM_TYPES, REDIRECT_TYPES } from './shared-item-types.js'

export const sharedItemsModule: AppModule = {
  name: 'shared-items',
  routes: async (app, deps) => {
    const accesses = createAccessRecorder(deps.db, (error) =>
      deps.log.warn({ err: error }, 'share access log write failed'),
    )
    app.addHook('onClose', async () => accesses.flush())
    await sharedItemsRoutes(app, {
      sharedItems: createSharedItemsService(deps),
      resolver: createSharedItemResolver(deps),
      accesses,
    })
  },
  grantTargets: [sharedItemGrantTarget],
  syncSources: [sharedItemSyncSource],
}
