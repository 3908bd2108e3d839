import { Module } from '@nestjs/common';
import { SchoolModelPoliciesController } from './school-model-policies.controller.js';
import { SchoolModelPolicies } from './school-model-policies.service.js';

@Module({ controllers: [SchoolModelPoliciesController], providers: [SchoolModelPolicies], exports: [SchoolModelPolicies] })
export class ModelPolicyModule {}
